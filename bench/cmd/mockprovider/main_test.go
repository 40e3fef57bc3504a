package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// Each mock shape of the load script, run with the flags load.sh passes
// (MockShape.Args), gives the Anthropic stream the workload package counts
// on: MockShape.Events events, the tool calls at the end, stamps when asked.
func TestShapes(t *testing.T) {
	for _, shape := range workload.Shapes() {
		t.Run(shape.Name, func(t *testing.T) {
			addr, opts, err := parseFlags(append([]string{"-addr", "127.0.0.1:0", "-no-record"}, shape.Args()...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if addr != "127.0.0.1:0" || opts.PadText != shape.Pad || opts.ChunkSize != shape.Chunk ||
				opts.InterEventDelay != shape.Delay || opts.StampText != shape.Stamp || len(opts.Default.ToolCalls) != shape.Tools || !opts.NoRecord {
				t.Fatalf("options %+v from %v", opts, shape.Args())
			}
			s := mock.New(opts)
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b := workload.EventDelay() // a small streaming Anthropic request
			req, _ := http.NewRequest(http.MethodPost, s.URL()+b.Path, bytes.NewReader(b.JSON))
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
			if len(events) != shape.Events {
				t.Fatalf("%d events, want %d", len(events), shape.Events)
			}
			tools := strings.Count(string(body), `"content_block":{"type":"tool_use"`)
			if tools != shape.Tools || (tools > 0 && !strings.Contains(events[len(events)-3], "content_block_stop")) {
				t.Errorf("%d tool calls, want %d at the end", tools, shape.Tools)
			}
			stamped := 0
			for _, ev := range events {
				if _, rest, ok := strings.Cut(ev, `"text_delta","text":"`); ok {
					if _, ok := mock.ParseStamp(rest); ok {
						stamped++
					}
				}
			}
			if want := 0; shape.Stamp && stamped != workload.StampedDeltas || !shape.Stamp && stamped != want {
				t.Errorf("%d stamped deltas (stamp %v)", stamped, shape.Stamp)
			}
		})
	}
	if _, _, err := parseFlags([]string{"-nope"}, io.Discard); err == nil {
		t.Error("unknown flag accepted")
	}
}
