package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// anthropicStream is an Anthropic SSE stream of n text deltas.
func anthropicStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range n {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"chunk %04d of text\"}}\n\n", i)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

// TestForwardEventsAllocs enforces zero allocations per forwarded SSE event
// on the pass-through path: forwarding ten times more events must not
// allocate more. (Allocation counts are meaningless under -race, which
// instruments memory accesses; the test skips there.)
func TestForwardEventsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	small, large := anthropicStream(100), anthropicStream(1000)
	src := bytes.NewReader(nil)
	w := bufio.NewWriterSize(io.Discard, 4096)
	r := rewrite.NewReader(src)
	run := func(stream []byte) float64 {
		return testing.AllocsPerRun(50, func() {
			src.Reset(stream)
			r.Reset(src)
			crlfSeen := false
			gone, err := forwardEvents(r, w, routeNamed("messages").api, true, &crlfSeen)
			if gone || err != nil {
				t.Fatalf("forwardEvents: gone=%v err=%v", gone, err)
			}
		})
	}
	perRun100, perRun1000 := run(small), run(large)
	if perRun100 != 0 || perRun1000 != 0 {
		t.Fatalf("forwarding allocates: %.1f allocs for 104 events, %.1f for 1004 events (want 0)", perRun100, perRun1000)
	}
}
