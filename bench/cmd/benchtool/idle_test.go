package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdingSSE answers every request with one SSE event, then holds the stream
// open (a ping comment now and then) until the client goes away. It counts
// open streams and the distinct session ids seen.
type holdingSSE struct {
	mu       sync.Mutex
	open     int
	peak     int
	sessions map[string]bool
	bad      string
}

func (h *holdingSSE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if r.URL.Path != "/v1/messages" || r.Header.Get("anthropic-version") == "" || r.Header.Get("Content-Type") != "application/json" {
		h.bad = fmt.Sprintf("%s %v", r.URL.Path, r.Header)
	}
	h.sessions[r.Header.Get("X-Session-Id")] = true
	h.open++
	h.peak = max(h.peak, h.open)
	h.mu.Unlock()
	defer func() { h.mu.Lock(); h.open--; h.mu.Unlock() }()

	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
	w.(http.Flusher).Flush()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			fmt.Fprint(w, ": ping\n\n")
			w.(http.Flusher).Flush()
		}
	}
}

func TestIdle(t *testing.T) {
	h := &holdingSSE{sessions: map[string]bool{}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	const n = 50
	r, err := runIdle(idleConfig{url: srv.URL, n: n, body: []byte(`{"stream":true}`), hold: 300 * time.Millisecond,
		timeout: 10 * time.Second, pid: os.Getpid(), dialers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if r.open != n || r.failed != 0 || r.firstErr != nil {
		t.Fatalf("open %d failed %d (err %v), want %d open", r.open, r.failed, r.firstErr, n)
	}
	if r.rssBefore <= 0 || r.rssOpen <= 0 {
		t.Errorf("rss before %d, open %d: not measured", r.rssBefore, r.rssOpen)
	}
	if ps := r.perStream(); ps != ps || ps != float64(r.rssOpen-r.rssBefore)/n {
		t.Errorf("per stream %v", ps)
	}
	h.mu.Lock()
	if h.peak != n || len(h.sessions) != n || h.bad != "" {
		t.Errorf("server saw peak %d open streams, %d sessions (want %d); bad request: %s", h.peak, len(h.sessions), n, h.bad)
	}
	h.mu.Unlock()
	// Every stream is closed afterwards.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h.mu.Lock()
		open := h.open
		h.mu.Unlock()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still open on the server", open)
		}
	}
	line := r.line()
	if !strings.HasPrefix(line, fmt.Sprintf("IDLE n=%d open=%d failed=0 rss_before_kb=%d rss_open_kb=%d per_stream_kb=", n, n, r.rssBefore, r.rssOpen)) {
		t.Errorf("line %q", line)
	}
}

func TestIdleLine(t *testing.T) {
	r := idleResult{n: 10, open: 8, failed: 2, rssBefore: 1000, rssOpen: 1200}
	if got, want := r.line(), "IDLE n=10 open=8 failed=2 rss_before_kb=1000 rss_open_kb=1200 per_stream_kb=25.0"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	r = idleResult{n: 5, open: 5, rssBefore: -1, rssOpen: -1}
	if got, want := r.line(), "IDLE n=5 open=5 failed=0 rss_before_kb=- rss_open_kb=- per_stream_kb=-"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

func TestIdleFailures(t *testing.T) {
	// A target that refuses (status 500) and one that is not listening.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer srv.Close()
	r, err := runIdle(idleConfig{url: srv.URL, n: 5, body: []byte(`{}`), timeout: 5 * time.Second, dialers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.open != 0 || r.failed != 5 || r.firstErr == nil || !strings.Contains(r.firstErr.Error(), "500") {
		t.Errorf("open %d failed %d err %v", r.open, r.failed, r.firstErr)
	}
	if !strings.HasSuffix(r.line(), "per_stream_kb=-") {
		t.Errorf("line %q", r.line())
	}
	// More streams than the client may open files: a clear error.
	if _, err := runIdle(idleConfig{url: srv.URL, n: 1 << 30, body: []byte(`{}`), timeout: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "RLIMIT_NOFILE") {
		t.Errorf("n beyond the fd limit: %v", err)
	}
}

func TestIdleReport(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "idle.tsv")
	tsv := strings.Join(idleColumns, "\t") + "\n" +
		"shepherd\t1000\t1000\t0\t20480\t51200\t30.7\n" +
		"shepherd-hooks\t10000\t9990\t10\t20480\t512000\t49.2\n" +
		"shepherd\t10000\t0\t10000\t-\t-\t-\n"
	if err := os.WriteFile(p, []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cmdIdleReport([]string{p}, &out); err != nil {
		t.Fatal(err)
	}
	want := "| target | streams | open | failed | RSS before MB | RSS open MB | KB per stream |\n" +
		"|---|--:|--:|--:|--:|--:|--:|\n" +
		"| shepherd | 1000 | 1000 | 0 | 20.0 | 50.0 | 30.7 |\n" +
		"| shepherd-hooks | 10000 | 9990 | 10 | 20.0 | 500.0 | 49.2 |\n" +
		"| shepherd | 10000 | 0 | 10000 | – | – | – |\n"
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
	// A wrong header is refused.
	os.WriteFile(p, []byte("target\tn\n"), 0o644)
	if err := cmdIdleReport([]string{p}, &out); err == nil {
		t.Error("bad header accepted")
	}
}
