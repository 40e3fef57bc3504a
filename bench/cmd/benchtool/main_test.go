package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// mockFor starts the mock with the options of a shape (the flags
// cmd/mockprovider turns MockShape.Args into; its own test checks that
// mapping).
func mockFor(t *testing.T, shape workload.MockShape) *mock.Server {
	t.Helper()
	opts := mock.Options{NoRecord: true, PadText: shape.Pad, ChunkSize: shape.Chunk, InterEventDelay: shape.Delay, StampText: shape.Stamp}
	if shape.Tools > 0 {
		opts.Default.ToolCalls = mock.NumberedToolCalls(shape.Tools)
	}
	m := mock.New(opts)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// The mock of each shape must serve every workload of that shape the way
// checkTarget (and the Go benchmarks) expect; a mock of another shape must
// fail the check.
func TestCheckTargetAgainstMock(t *testing.T) {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, shape := range workload.Shapes() {
		if err := checkTarget(client, mockFor(t, shape).URL(), shape.Name); err != nil {
			t.Errorf("%s: %v", shape.Name, err)
		}
	}
	wrong := mockFor(t, workload.MockDefault).URL()
	for _, shape := range []string{workload.MockAgentStream.Name, workload.MockStamped.Name} {
		if err := checkTarget(client, wrong, shape); err == nil {
			t.Errorf("%s workloads accepted from the default mock", shape)
		}
	}
	if len(bodiesOf("nope")) != 0 || len(bodiesOf(workload.MockDefault.Name)) != 4 {
		t.Errorf("bodiesOf")
	}
}

func TestBodies(t *testing.T) {
	dir := t.TempDir()
	if err := cmdBodies([]string{dir}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"small.json", "agent50k.json", "chat50k.json", "stream.json", "agent50k-stream.json", "stamped.json",
		"small.headers", "chat50k.headers", "post.lua", "workloads.tsv", "mock-default.args", "mock-agent-stream.args", "mock-stamped.args"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	lua, _ := os.ReadFile(filepath.Join(dir, "post.lua"))
	if !strings.Contains(string(lua), `io.lines(os.getenv("HEADERS_FILE"))`) || !strings.Contains(string(lua), `"bench-" .. (n % 64)`) ||
		!strings.Contains(string(lua), `"RESULT requests=%d duration_us=%d`) || strings.Contains(string(lua), "%%") {
		t.Errorf("post.lua:\n%s", lua)
	}
	tsv, _ := os.ReadFile(filepath.Join(dir, "workloads.tsv"))
	for _, want := range []string{"name\tapi\tpath\tstream\tmock\tevents\n", "small\tanthropic\t/v1/messages\t0\tdefault\t0\n",
		"chat50k\tchat\t/v1/chat/completions\t0\tdefault\t0\n", "stream\tanthropic\t/v1/messages\t1\tdefault\t100\n",
		"agent50k-stream\tanthropic\t/v1/messages\t1\tagent-stream\t300\n", "stamped\tanthropic\t/v1/messages\t1\tstamped\t50\n"} {
		if !strings.Contains(string(tsv), want) {
			t.Errorf("workloads.tsv lacks %q:\n%s", want, tsv)
		}
	}
	args, _ := os.ReadFile(filepath.Join(dir, "mock-agent-stream.args"))
	if string(args) != "-pad 4624 -chunk 16 -delay 0s -tools 1\n" {
		t.Errorf("mock-agent-stream.args %q", args)
	}
	for name, want := range map[string][][2]string{"small": workload.Headers, "chat50k": workload.ChatHeaders} {
		got, err := readHeaders(filepath.Join(dir, name+".headers"))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s.headers: %v %v, want %v", name, got, err, want)
		}
	}
	bad := filepath.Join(dir, "bad.headers")
	_ = os.WriteFile(bad, []byte("no colon here\n"), 0o644)
	if _, err := readHeaders(bad); err == nil {
		t.Error("bad header line accepted")
	}
}

func TestDescribe(t *testing.T) {
	var out strings.Builder
	if err := cmdDescribe([]string{"small", "chat50k", "agent50k-stream"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- Workloads: small = 149 B Anthropic Messages request (one user turn) → JSON reply with 1520 B of text; chat50k = ",
		" B OpenAI Chat Completions request (agent-shaped: long system prompt, 12 tools, 30 tool round trips) → JSON reply",
		`agent50k-stream = 51641 B Anthropic Messages request (agent-shaped: long system prompt, 12 tools, 30 tool round trips, "stream":true) → SSE stream of 4624 B of text in 16-char deltas, then a tool call (300 events)` + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
	if err := cmdDescribe([]string{"nope"}, &out); err == nil {
		t.Error("unknown workload described")
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
BenchmarkProxySession/hooks-on-2 	       5	  56479443 ns/op	   1263272 last-ns	    941324 ns/request	26570708 B/op	   61364 allocs/op
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
		"| ProxySession/hooks-on | 941324 | 1263272 | 56479443 | 26570708 | 61364 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("gobench lacks %q:\n%s", want, got)
		}
	}
}
