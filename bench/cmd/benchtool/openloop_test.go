package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

func TestPercentile(t *testing.T) {
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {10, 1}, {50, 5}, {51, 6}, {90, 9}, {99, 10}, {100, 10}} {
		if got := percentile(s, c.p); got != c.want {
			t.Errorf("p%g = %d, want %d", c.p, got, c.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of no samples")
	}
}

func checkOrdered(t *testing.T, name string, s []time.Duration, lo, hi time.Duration) {
	t.Helper()
	if len(s) == 0 {
		t.Errorf("%s: no samples", name)
		return
	}
	p50, p90, p99, p999, mx := percentile(s, 50), percentile(s, 90), percentile(s, 99), percentile(s, 99.9), percentile(s, 100)
	if !(p50 <= p90 && p90 <= p99 && p99 <= p999 && p999 <= mx) {
		t.Errorf("%s: percentiles out of order: %v %v %v %v %v", name, p50, p90, p99, p999, mx)
	}
	if p50 < lo || p50 > hi {
		t.Errorf("%s: p50 %v outside [%v, %v]", name, p50, lo, hi)
	}
}

func TestOpenloopJSON(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		if r.Header.Get("anthropic-version") == "" || r.Header.Get("X-Extra") != "yes" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "missing headers", http.StatusBadRequest)
			return
		}
		time.Sleep(2 * time.Millisecond)
		w.Write([]byte(`{"type":"message"}`))
	}))
	defer srv.Close()
	st, err := runOpenloop(openloopConfig{url: srv.URL, body: []byte(`{}`), headers: append(slices.Clone(workload.Headers), [2]string{"X-Extra", "yes"}),
		rate: 200, warmup: 200 * time.Millisecond, duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got.Load() != 240 || st.sent != 200 || st.errors != 0 || len(st.lat) != 200 {
		t.Fatalf("server got %d, sent %d, errors %d (%v), samples %d; want 240, 200, 0, 200", got.Load(), st.sent, st.errors, st.firstErr, len(st.lat))
	}
	checkOrdered(t, "latency", st.lat, 2*time.Millisecond, 200*time.Millisecond)
	if len(st.ttfb) != 0 || len(st.gaps) != 0 {
		t.Error("stream samples from a JSON run")
	}
	line := st.line(false, false)
	if !strings.HasPrefix(line, "OPENLOOP rate=200 sent=200 errors=0 p50_us=") || strings.Contains(line, "ttfb") {
		t.Errorf("line %q", line)
	}
}

func TestOpenloopStream(t *testing.T) {
	const events = 5
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		time.Sleep(3 * time.Millisecond) // time to first byte
		for i := range events {
			if i > 0 {
				time.Sleep(time.Millisecond)
			}
			fmt.Fprintf(w, "event: e\ndata: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	st, err := runOpenloop(openloopConfig{url: srv.URL, body: []byte(`{}`), stream: true,
		rate: 100, warmup: 100 * time.Millisecond, duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if st.sent != 100 || st.errors != 0 || len(st.lat) != 100 || len(st.ttfb) != 100 || st.events != 100*events || len(st.gaps) != 100*(events-1) {
		t.Fatalf("sent %d errors %d (%v) lat %d ttfb %d events %d gaps %d", st.sent, st.errors, st.firstErr,
			len(st.lat), len(st.ttfb), st.events, len(st.gaps))
	}
	checkOrdered(t, "latency", st.lat, 7*time.Millisecond, 300*time.Millisecond)
	checkOrdered(t, "ttfb", st.ttfb, 3*time.Millisecond, 200*time.Millisecond)
	checkOrdered(t, "gaps", st.gaps, 500*time.Microsecond, 100*time.Millisecond)
	if percentile(st.ttfb, 50) > percentile(st.lat, 50) {
		t.Error("ttfb p50 above latency p50")
	}
	if line := st.line(true, false); !strings.Contains(line, " ttfb_p50_us=") || !strings.Contains(line, " gap_p99_us=") || strings.Contains(line, "delay") {
		t.Errorf("line %q", line)
	}
}

// Errors: non-200 replies and replies later than the limit.
func TestOpenloopErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			http.Error(w, "no", http.StatusBadGateway)
		case 1:
			time.Sleep(300 * time.Millisecond) // beyond the limit
		}
	}))
	defer srv.Close()
	st, err := runOpenloop(openloopConfig{url: srv.URL, body: []byte(`{}`), rate: 60, duration: 500 * time.Millisecond,
		limit: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if st.sent != 30 || st.errors != 20 || len(st.lat) != 10 {
		t.Errorf("sent %d errors %d ok %d; want 30, 20, 10", st.sent, st.errors, len(st.lat))
	}
}

func TestOpenloopReport(t *testing.T) {
	tsv := strings.Join(openloopColumns, "\t") + "\n" +
		"small\tshepherd\t500\t2500\t0\t300\t400\t900\t1000\t1200\t-\t-\t-\t-\n" +
		"small\tdirect\t500\t2500\t0\t100\t150\t300\t400\t500\t-\t-\t-\t-\n" +
		"small\tnginx\t500\t2500\t1\t150\t200\t450\t500\t600\t-\t-\t-\t-\n" +
		"stream\tdirect\t100\t500\t0\t1000\t1200\t2000\t2100\t2200\t200\t400\t5\t20\n" +
		"stream\tshepherd\t100\t500\t0\t1500\t1800\t3000\t3100\t3200\t350\t900\t6\t40\n"
	path := filepath.Join(t.TempDir(), "openloop.tsv")
	if err := os.WriteFile(path, []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cmdOpenloopReport([]string{path}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| small | direct | 500 | 2500 | 0 | 100 | 300 | – | – | – | – | – | – |\n",
		"| small | nginx | 500 | 2500 | 1 | 150 | 450 | +50 | +150 | 1.50 | 1.50 | – | – |\n",
		"| small | shepherd | 500 | 2500 | 0 | 300 | 900 | +200 | +600 | 3.00 | 3.00 | 2.00 | 2.00 |\n",
		"| stream | shepherd | 100 | 500 | 0 | 1500 | 3000 | +500 | +1000 | 1.50 | 1.50 | – | – |\n",
		"| stream | direct | 200 | 400 | – | – | 5 | 20 |\n",
		"| stream | shepherd | 350 | 900 | +150 | +500 | 6 | 40 |\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| small | direct | – |") || strings.Count(out.String(), "| small |") != 3 {
		t.Errorf("JSON workload in the stream table:\n%s", out.String())
	}
	// Targets in the conventional order: direct, nginx, shepherd.
	if i, j := strings.Index(out.String(), "| small | direct"), strings.Index(out.String(), "| small | shepherd"); i > j {
		t.Errorf("target order:\n%s", out.String())
	}
	if err := os.WriteFile(path, []byte("workload\ttarget\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmdOpenloopReport([]string{path}, &out); err == nil {
		t.Error("bad header accepted")
	}
}
