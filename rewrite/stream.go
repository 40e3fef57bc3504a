package rewrite

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// EventKind is the normalised meaning of one decoded stream event.
type EventKind int

// Stream event kinds.
const (
	// Other (the zero value) is an event with nothing for the views: a
	// lifecycle event, an unknown type, a part shepherd does not model.
	Other EventKind = iota
	// StreamStart opens the reply (Anthropic message_start, Responses
	// response.created, the first Chat or Gemini chunk). Model and, where the
	// API reports it there, Usage are set.
	StreamStart
	// BlockStart opens a content block or output item. For a tool call it
	// carries ToolCallID and ToolName, and may carry a first ArgsDelta.
	BlockStart
	// BlockDelta carries a piece of a block: TextDelta for text and thinking,
	// ArgsDelta for tool-call arguments.
	BlockDelta
	// BlockStop closes a block. For a tool call whose arguments arrived
	// whole in the stop event (and were not streamed before), ArgsDelta
	// holds them.
	BlockStop
	// Finish reports why the reply ended (Stop, RawStop), with Usage when the
	// same wire event carries it.
	Finish
	// Usage reports token usage on its own.
	Usage
	// Done is the wire end-of-stream marker (Anthropic message_stop, the
	// OpenAI "[DONE]" line). Responses and Gemini streams end with Finish and
	// the end of the body instead.
	Done
	// Ping is a keep-alive.
	Ping
	// Error is an error reported inside the stream; ErrorMessage holds its
	// message.
	Error
)

var eventKindNames = [...]string{"other", "start", "block_start", "block_delta", "block_stop", "finish", "usage", "done", "ping", "error"}

// String returns a short lower-case name for logs and test failures.
func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "unknown"
}

// StreamEvent is one normalised event decoded from a wire event. One wire
// event can yield several (a Chat chunk with text, a tool call and a finish
// reason; a Gemini chunk with several parts). Strings never alias the wire
// event's bytes.
type StreamEvent struct {
	Kind EventKind
	// Index locates the block: the Anthropic content-block index; for Chat
	// the tool_calls[].index of tool-call events (0, the choice, for text);
	// the Responses output_index; for Gemini the part's position within its
	// chunk (each Gemini tool call is a BlockStart and BlockStop pair in one
	// chunk).
	Index int
	// Seq is the Responses sequence_number, -1 where the API has none.
	Seq int64
	// BlockKind is the kind of block a Block* event belongs to.
	BlockKind conv.BlockKind
	// ToolCallID and ToolName identify a tool call on BlockStart (and on
	// later events where the wire repeats them).
	ToolCallID, ToolName string
	// TextDelta is text or thinking text; ArgsDelta is a fragment of a tool
	// call's arguments JSON (Anthropic partial_json, an OpenAI arguments
	// fragment, whole Gemini args).
	TextDelta, ArgsDelta string
	// Stop and RawStop are set on Finish.
	Stop    conv.StopReason
	RawStop string
	// Usage is set on StreamStart, Finish and Usage events that report
	// usage. Zero fields mean "not reported in this event".
	Usage *conv.Usage
	// Model is set on StreamStart when the wire names the model.
	Model string
	// ErrorMessage is set on Error events (and on a failed Responses Finish).
	ErrorMessage string
}

// StreamDecoder decodes the events of one streamed reply, in order.
type StreamDecoder interface {
	// Decode returns the normalised events of one wire event: an SSE event,
	// or, for a Gemini JSON-array stream, Event{Data: elem}. Comment-only
	// events give none. A payload that is not valid JSON gives an error
	// wrapping ErrMalformedReply; decoding may go on with the next event.
	// The returned slice is reused by the next call to Decode.
	Decode(ev Event) ([]StreamEvent, error)
}

// StreamAccumulator folds a stream's decoded events into the Reply the
// complete stream amounts to. The zero value is ready to use; it is not safe
// for concurrent use.
type StreamAccumulator struct {
	reply conv.Reply
	text  []byte
	calls []accCall
}

type accCall struct {
	index    int // StreamEvent.Index of the call's events
	id, name string
	args     []byte
	hasArgs  bool
}

// Add folds events into the accumulated reply: text deltas of text blocks
// are concatenated; a tool-call BlockStart opens a new call and later tool
// call events with the same Index extend the most recent call with that
// Index; Finish sets the stop reason; usage fields reported as non-zero
// overwrite earlier values (every API reports cumulative counts).
func (a *StreamAccumulator) Add(evs ...StreamEvent) {
	for i := range evs {
		a.add(&evs[i])
	}
}

func (a *StreamAccumulator) add(e *StreamEvent) {
	if e.Model != "" {
		a.reply.Model = e.Model
	}
	if u := e.Usage; u != nil {
		overwrite(&a.reply.Usage.InputTokens, u.InputTokens)
		overwrite(&a.reply.Usage.OutputTokens, u.OutputTokens)
		overwrite(&a.reply.Usage.CacheReadTokens, u.CacheReadTokens)
		overwrite(&a.reply.Usage.CacheWriteTokens, u.CacheWriteTokens)
	}
	switch e.Kind {
	case BlockStart, BlockDelta, BlockStop:
		switch e.BlockKind {
		case conv.BlockText:
			a.text = append(a.text, e.TextDelta...)
		case conv.BlockToolCall:
			a.addCall(e)
		}
	case Finish:
		a.reply.Stop, a.reply.RawStop = e.Stop, e.RawStop
	}
}

// overwrite sets *dst to a usage count reported as non-zero.
func overwrite(dst *int64, n int64) {
	if n > 0 {
		*dst = n
	}
}

func (a *StreamAccumulator) addCall(e *StreamEvent) {
	var c *accCall
	if e.Kind != BlockStart {
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].index == e.Index {
				c = &a.calls[i]
				break
			}
		}
	}
	if c == nil {
		a.calls = append(a.calls, accCall{index: e.Index})
		c = &a.calls[len(a.calls)-1]
	}
	if c.id == "" {
		c.id = e.ToolCallID
	}
	if c.name == "" {
		c.name = e.ToolName
	}
	if e.ArgsDelta != "" {
		c.args = append(c.args, e.ArgsDelta...)
		c.hasArgs = true
	}
}

// Reply returns the reply accumulated so far. Each call returns a fresh
// Reply that does not alias the accumulator.
func (a *StreamAccumulator) Reply() *conv.Reply {
	r := a.reply
	r.Text = string(a.text)
	r.ToolCalls = nil
	for i, c := range a.calls {
		tc := conv.ToolCall{Index: i, ID: c.id, Name: c.name}
		if c.hasArgs {
			tc.Args = append([]byte(nil), c.args...)
		}
		r.ToolCalls = append(r.ToolCalls, tc)
	}
	return &r
}

// CallObserving is implemented by stream splicers that report tool-call
// arguments while they stream (conv.ToolCallDelta). ObserveCalls sets the
// observer, before the first Feed; nil removes it. With no observer set
// the splicer does no work for it (no allocation per event).
type CallObserving interface {
	ObserveCalls(fn conv.CallObserver)
}
