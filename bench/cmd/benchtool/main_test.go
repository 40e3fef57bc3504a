package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shepherd/bench/mock"
	"shepherd/bench/workload"
)

// The mock, run with the flags bodies writes to mock.args, must serve every
// workload in the shape checkTarget (and the Go benchmarks) expect.
func TestCheckTargetAgainstMock(t *testing.T) {
	m := mock.New(mock.Options{NoRecord: true, PadText: workload.PadText, ChunkSize: workload.ChunkSize})
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := checkTarget(&http.Client{Timeout: 5 * time.Second}, m.URL()); err != nil {
		t.Fatal(err)
	}
}

func TestBodies(t *testing.T) {
	dir := t.TempDir()
	if err := cmdBodies([]string{dir}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"small.json", "agent50k.json", "stream.json", "post.lua", "mock.args"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	lua, _ := os.ReadFile(filepath.Join(dir, "post.lua"))
	if !strings.Contains(string(lua), `wrk.headers["anthropic-version"] = "2023-06-01"`) || strings.Contains(string(lua), "%!") {
		t.Errorf("post.lua:\n%s", lua)
	}
}

func TestReport(t *testing.T) {
	tsv := strings.Join(resultColumns, "\t") + "\n" +
		"small\tshepherd\t1\t500\t2000\t3000\t4000\t5000\t0\t30\t10\t8\t90\t95\t1.5\n" +
		"small\tdirect\t1\t1000\t1000\t1500\t2000\t10000\t0\tnan\t10\t8\tnan\tnan\t0\n" +
		"small\tnginx\t1\t800\t1250\t2000\t2500\t8000\t0\t20\t10\t8\t80\t95\t0.5\n" +
		"small\tdirect\t2\t1200\t1000\t1500\t2000\t12000\t1\tnan\t10\t8\tnan\tnan\t0\n"
	path := filepath.Join(t.TempDir(), "results.tsv")
	if err := os.WriteFile(path, []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := cmdReport([]string{"-noisy", "1", path}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| small | direct | 1100 | 1.00 | 1.50 | 2.00 | – | – | – | – | – | – | – | 1 |",
		"| small | nginx | 800 | 1.25 | 2.00 | 2.50 | 0.73 | 1.25 | 1.25 | – | – | – | 20.0 | 0 |",
		"⚠ other processes used more than 1% of the machine",
		"| small | nginx | 800 |",
		"| small | shepherd ⚠ | 500 | 2.00 | 3.00 | 4.00 | 0.45 | 2.00 | 2.00 | 0.62 | 1.60 | 1.60 | 30.0 | 0 |",
		"| small | direct | – | – | 10.0 | 8.0 | 0 | 22000 | 2 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// Targets come out in the conventional order whatever the input order.
	if strings.Index(got, "| small | direct |") > strings.Index(got, "| small | shepherd") {
		t.Errorf("direct not first:\n%s", got)
	}
}

func TestGobench(t *testing.T) {
	in := `goos: linux
BenchmarkDirectJSON/small-2   	   46279	     26299 ns/op	       149.0 req-B	      1828 resp-B	    2605 B/op	       8 allocs/op
BenchmarkProxyJSON/small-2    	   10000	    106810 ns/op	       149.0 req-B	      1828 resp-B	   37357 B/op	      37 allocs/op
BenchmarkProxySSE-2           	    1772	    810355 ns/op	       100.0 events/op	      8104 ns/event	   36351 B/op	      69 allocs/op
PASS
`
	var out strings.Builder
	if err := cmdGobench(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| DirectJSON/small | 26299 | 2605 | 8 | – | – | – | – |",
		"| ProxyJSON/small | 106810 | 37357 | 37 | – | +80511 | +34752 | +29 |",
		"| ProxySSE | 810355 | 36351 | 69 | 8104 | – | – | – |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("gobench lacks %q:\n%s", want, got)
		}
	}
}
