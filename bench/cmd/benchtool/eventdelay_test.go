package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

func TestEventStamp(t *testing.T) {
	const ns = int64(1763000000123456789)
	for _, c := range []struct {
		ev   string
		text bool
		err  bool
	}{
		{"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"1763000000123456789 \"}}", true, false},
		{"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"1763000000123456789\"}}]}", true, false},
		{"event: content_block_delta\r\ndata:{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"1763000000123456789\"}}\r", true, false},
		{"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}", false, false},
		{"event: message_stop\ndata: {\"type\":\"message_stop\"}", false, false},
		{"data: [DONE]", false, false},
		{": ping", false, false},
		{"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}", false, false},
		{"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Lorem ipsum dolor sit\"}}", true, true},
		{"data: {not json", false, true},
	} {
		sent, text, err := eventStamp([]byte(c.ev))
		if text != c.text || (err != nil) != c.err {
			t.Errorf("%q: text %v err %v", c.ev, text, err)
			continue
		}
		if text && err == nil && sent.UnixNano() != ns {
			t.Errorf("%q: stamp %d", c.ev, sent.UnixNano())
		}
	}
}

// A stamped stream whose stamps are 5 ms old when sent: every delay is at
// least 5 ms, and an event split across two writes counts once.
func TestOpenloopStamped(t *testing.T) {
	const age = 5 * time.Millisecond
	const deltas = 4
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
		fl.Flush()
		for range deltas {
			time.Sleep(time.Millisecond)
			ev := fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%019d \"}}\n\n",
				time.Now().Add(-age).UnixNano())
			half := len(ev) / 2
			fmt.Fprint(w, ev[:half])
			fl.Flush()
			time.Sleep(200 * time.Microsecond)
			fmt.Fprint(w, ev[half:])
			fl.Flush()
		}
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer srv.Close()
	st, err := runOpenloop(openloopConfig{url: srv.URL, body: []byte(`{}`), stream: true, stamped: true,
		rate: 50, warmup: 100 * time.Millisecond, duration: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if st.sent != 20 || st.errors != 0 || len(st.delays) != 20*deltas || st.events != 20*(deltas+2) {
		t.Fatalf("sent %d errors %d (%v) delays %d events %d", st.sent, st.errors, st.firstErr, len(st.delays), st.events)
	}
	checkOrdered(t, "delays", st.delays, age, age+100*time.Millisecond)
	if st.delays[0] < age {
		t.Errorf("delay %v below the stamps' age %v", st.delays[0], age)
	}
	line := st.line(true, true)
	if !strings.Contains(line, fmt.Sprintf(" delay_events=%d delay_p50_us=", 20*deltas)) || !strings.Contains(line, " delay_max_us=") {
		t.Errorf("line %q", line)
	}
}

// Against the mock of the event-delay phase: one delay per text delta,
// small and positive.
func TestOpenloopStampedAgainstMock(t *testing.T) {
	m := mockFor(t, workload.MockStamped)
	b := workload.EventDelay()
	st, err := runOpenloop(openloopConfig{url: m.URL() + b.Path, body: b.JSON, headers: b.Headers, stream: true, stamped: true,
		rate: 20, warmup: 0, duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if st.errors != 0 || len(st.delays) != st.sent*workload.StampedDeltas || st.events != st.sent*b.Events() {
		t.Fatalf("sent %d errors %d (%v) delays %d events %d", st.sent, st.errors, st.firstErr, len(st.delays), st.events)
	}
	if lo, hi := st.delays[0], st.delays[len(st.delays)-1]; lo <= 0 || hi > time.Second {
		t.Errorf("delays from %v to %v", lo, hi)
	}
	// The unstamped stream is an error in stamped mode.
	plain := mockFor(t, workload.MockDefault)
	st, err = runOpenloop(openloopConfig{url: plain.URL() + b.Path, body: b.JSON, headers: b.Headers, stream: true, stamped: true,
		rate: 20, duration: 100 * time.Millisecond})
	if err != nil || st.errors != st.sent || st.firstErr == nil || !strings.Contains(st.firstErr.Error(), "without a send-time stamp") {
		t.Errorf("unstamped stream: %d/%d errors, %v", st.errors, st.sent, st.firstErr)
	}
}

func TestEventDelayReport(t *testing.T) {
	tsv := strings.Join(eventdelayColumns, "\t") + "\n" +
		"shepherd\t20\t100\t0\t4500\t45.5\t60\t80.4\t120\t300\n" +
		"direct\t20\t100\t0\t4500\t20.2\t25\t30\t40\t90\n" +
		"nginx\t20\t100\t1\t4455\t35\t40\t50.1\t70\t-\n"
	path := filepath.Join(t.TempDir(), "eventdelay.tsv")
	if err := os.WriteFile(path, []byte(tsv), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cmdEventDelayReport([]string{path}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| target | streams/s | streams | errors | events | delay p50 µs | delay p90 µs | delay p99 µs | delay max µs | added p50 µs | added p99 µs |\n",
		"| direct | 20 | 100 | 0 | 4500 | 20 | 25 | 30 | 90 | – | – |\n",
		"| nginx | 20 | 100 | 1 | 4455 | 35 | 40 | 50 | – | +15 | +20 |\n",
		"| shepherd | 20 | 100 | 0 | 4500 | 46 | 60 | 80 | 300 | +25 | +50 |\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Index(out.String(), "| direct") > strings.Index(out.String(), "| shepherd") {
		t.Errorf("target order:\n%s", out.String())
	}
	_ = os.WriteFile(path, []byte(tsv+"direct\t20\t1\t0\t1\t1\t1\t1\t1\t1\n"), 0o644)
	if err := cmdEventDelayReport([]string{path}, &out); err == nil {
		t.Error("duplicate target accepted")
	}
	_ = os.WriteFile(path, []byte("target\trate\n"), 0o644)
	if err := cmdEventDelayReport([]string{path}, &out); err == nil {
		t.Error("bad header accepted")
	}
}
