package anthropic

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite"
)

// mockStream fetches one streamed reply of the bench mock with shape's text,
// chunking and tool calls, as the load bench's mockprovider serves it.
func mockStream(tb testing.TB, shape workload.MockShape, path string, body []byte) []byte {
	tb.Helper()
	var def mock.Reply
	if shape.Tools > 0 {
		def.ToolCalls = mock.NumberedToolCalls(shape.Tools)
	}
	m := mock.New(mock.Options{NoRecord: true, Default: def, PadText: shape.Pad, ChunkSize: shape.Chunk})
	if err := m.Start(); err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	resp, err := http.Post(m.URL()+path, "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("mock stream: status %d, %v", resp.StatusCode, err)
	}
	return b
}

// agentStreamEvents is the load bench's agent50k-stream reply (300 events:
// 289 text deltas, then a tool_use block), split into events (copied).
func agentStreamEvents(tb testing.TB) []rewrite.Event {
	tb.Helper()
	w, ok := workload.ByName("agent50k-stream")
	if !ok {
		tb.Fatal("no agent50k-stream workload")
	}
	s := mockStream(tb, w.Mock, w.Path, w.JSON)
	evs := cloneEvents(s)
	if len(evs) != w.Events() {
		tb.Fatalf("%d events, want %d", len(evs), w.Events())
	}
	return evs
}

// BenchmarkAnthropicSplicerFeed runs the splicer over the agent stream the
// way the proxy's stream writer does (Feed per event, then Reply, Release
// and Finish): the per-event work of the hooks-on stream path.
func BenchmarkAnthropicSplicerFeed(b *testing.B) {
	evs := agentStreamEvents(b)
	n := 0
	for _, ev := range evs {
		n += len(ev.Raw)
	}
	b.Run("feed", func(b *testing.B) {
		b.SetBytes(int64(n))
		b.ReportAllocs()
		for b.Loop() {
			sp := Descriptor.NewSplicer()
			for _, ev := range evs {
				if _, err := sp.Feed(&ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
	})
	b.Run("turn", func(b *testing.B) {
		b.SetBytes(int64(n))
		b.ReportAllocs()
		for b.Loop() {
			sp := Descriptor.NewSplicer()
			for _, ev := range evs {
				if _, err := sp.Feed(&ev); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := sp.Reply(); err != nil {
				b.Fatal(err)
			}
			if _, err := sp.Release(nil, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := sp.Finish(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAgentStreamShape checks the benchmark's input: the mock's agent
// stream goes through the splicer unchanged.
func TestAgentStreamShape(t *testing.T) {
	evs := agentStreamEvents(t)
	var in strings.Builder
	for _, ev := range evs {
		in.Write(ev.Raw)
	}
	sp := Descriptor.NewSplicer()
	var out []byte
	for _, ev := range evs {
		b, err := sp.Feed(&ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	if _, err := sp.Reply(); err != nil {
		t.Fatal(err)
	}
	b, err := sp.Release(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, b...)
	b, err = sp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, b...)
	if string(out) != in.String() {
		t.Fatalf("splicer changed the stream:\n%s", out)
	}
}

// cloneEvents reads every event of stream s, each a copy that outlives the
// reader.
func cloneEvents(s []byte) []rewrite.Event {
	r := rewrite.NewReader(strings.NewReader(string(s)))
	var evs []rewrite.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, rewrite.Event{Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data), Raw: bytes.Clone(ev.Raw), ID: bytes.Clone(ev.ID)})
	}
}
