//go:build !race

package rewrite_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// observeAllocCase is, per API, a stream opening (a text block, or a tool
// call) and the event repeated after it: a text delta, or a piece of the
// call's arguments.
type observeAllocCase struct {
	textOpen, text, toolOpen, tool string
	// zeroText: a text event is forwarded without allocating (the event
	// as it came), observer or not.
	zeroText bool
}

var observeAllocCases = map[string]observeAllocCase{
	"anthropic": {
		zeroText: true,
		textOpen: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		text: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a chunk of text\"}}\n\n",
		toolOpen: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Write\",\"input\":{}}}\n\n",
		tool: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"a chunk of content\"}}\n\n",
	},
	"openai_chat": {
		zeroText: true,
		textOpen: "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
		text:     "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a chunk of text\"},\"finish_reason\":null}]}\n\n",
		toolOpen: "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
		tool:     "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"a chunk of content\"}}]},\"finish_reason\":null}]}\n\n",
	},
	"openai_responses": {
		zeroText: true,
		textOpen: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r\",\"output\":[]}}\n\n" +
			"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg\",\"type\":\"message\",\"content\":[]}}\n\n",
		text: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg\",\"output_index\":0,\"content_index\":0,\"delta\":\"a chunk of text\"}\n\n",
		toolOpen: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r\",\"output\":[]}}\n\n" +
			"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"fc\",\"type\":\"function_call\",\"call_id\":\"t1\",\"name\":\"write\",\"arguments\":\"\"}}\n\n",
		tool: "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":2,\"item_id\":\"fc\",\"output_index\":0,\"delta\":\"a chunk of content\"}\n\n",
	},
	"gemini": {
		zeroText: true,
		textOpen: "",
		text:     "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a chunk of text\"}],\"role\":\"model\"},\"index\":0}]}\n\n",
		toolOpen: "",
		tool:     "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"write\",\"args\":{\"path\":\"a\"}}}],\"role\":\"model\"},\"index\":0}]}\n\n",
	},
}

// events reads the events of an SSE text.
func events(t *testing.T, s string) []rewrite.Event {
	t.Helper()
	rd := rewrite.NewReader(bytes.NewReader([]byte(s)))
	var evs []rewrite.Event
	for {
		ev, err := rd.Next()
		if len(ev.Raw) > 0 {
			evs = append(evs, rewrite.Event{Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data), Raw: bytes.Clone(ev.Raw)})
		}
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// feedAllocs opens a splicer's stream with open, then returns the
// allocations per Feed of ev, with or without an observer, and how many
// deltas the observer got.
func feedAllocs(t *testing.T, api *rewrite.Descriptor, open, ev string, observe bool) (float64, int) {
	t.Helper()
	sp := api.NewSplicer()
	seen := 0
	if observe {
		sp.(rewrite.CallObserving).ObserveCalls(func(conv.ToolCallDelta) { seen++ })
	}
	for _, e := range events(t, open) {
		if _, err := sp.Feed(&e); err != nil {
			t.Fatal(err)
		}
	}
	e := events(t, ev)[0]
	for range 200 { // warm up: accumulators reach their size
		if _, err := sp.Feed(&e); err != nil {
			t.Fatal(err)
		}
	}
	n := testing.AllocsPerRun(2000, func() {
		if _, err := sp.Feed(&e); err != nil {
			t.Fatal(err)
		}
	})
	return n, seen
}

// TestObserveAllocs: setting an observer adds no allocation to a text
// event (none at all where forwarding one allocates nothing) nor to a
// tool-call event, whose count is reported (go test -v -run
// TestObserveAllocs ./rewrite/).
func TestObserveAllocs(t *testing.T) {
	for _, api := range apis.All() {
		c, ok := observeAllocCases[api.Name]
		if !ok || api.NewSplicer == nil {
			continue
		}
		t.Run(api.Name, func(t *testing.T) {
			off, _ := feedAllocs(t, api, c.textOpen, c.text, false)
			on, _ := feedAllocs(t, api, c.textOpen, c.text, true)
			if on != off || c.zeroText && on != 0 {
				t.Errorf("text event: %v allocs/op with an observer, %v without", on, off)
			}
			toolOff, _ := feedAllocs(t, api, c.toolOpen, c.tool, false)
			toolOn, seen := feedAllocs(t, api, c.toolOpen, c.tool, true)
			if seen == 0 {
				t.Errorf("the observer saw no tool-call delta")
			}
			t.Logf("text event %v allocs/op (observer: %v); tool-call event %v allocs/op (observer: %v)", off, on, toolOff, toolOn)
			if toolOn != toolOff {
				t.Errorf("tool-call event: %v allocs/op with an observer, %v without", toolOn, toolOff)
			}
		})
	}
}

// BenchmarkObserveToolDelta measures Feed of a tool-call arguments event
// without and with an observer (go test -run x -bench ObserveToolDelta
// -benchmem ./rewrite/).
func BenchmarkObserveToolDelta(b *testing.B) {
	for _, api := range apis.All() {
		c, ok := observeAllocCases[api.Name]
		if !ok || api.NewSplicer == nil {
			continue
		}
		for _, observe := range []bool{false, true} {
			name := api.Name + "/off"
			if observe {
				name = api.Name + "/on"
			}
			b.Run(name, func(b *testing.B) {
				t := &testing.T{}
				sp := api.NewSplicer()
				if observe {
					n := 0
					sp.(rewrite.CallObserving).ObserveCalls(func(conv.ToolCallDelta) { n++ })
				}
				for _, e := range events(t, c.toolOpen) {
					if _, err := sp.Feed(&e); err != nil {
						b.Fatal(err)
					}
				}
				e := events(t, c.tool)[0]
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := sp.Feed(&e); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
