package rewrite

import (
	"bytes"

	"github.com/tidwall/gjson"

	"shepherd/hooks"
)

// This file holds the Responses reply side: the response object view and the
// typed SSE event decoder.

func (responsesCodec) ParseReply(body []byte) (*hooks.Reply, error) {
	root, err := parseReplyRoot(body)
	if err != nil {
		return nil, err
	}
	return responsesReply(root), nil
}

// responsesReply views a response object (a reply body, or the response of a
// terminal stream event).
func responsesReply(resp gjson.Result) *hooks.Reply {
	r := &hooks.Reply{Model: str(resp.Get("model"))}
	var text []byte
	eachElem(resp.Get("output"), func(_ int, it gjson.Result) bool {
		switch it.Get("type").Str {
		case "message":
			eachElem(it.Get("content"), func(_ int, p gjson.Result) bool {
				if p.Get("type").Str == "output_text" {
					text = append(text, p.Get("text").Str...)
				}
				return true
			})
		case "function_call":
			tc := hooks.ToolCall{Index: len(r.ToolCalls), ID: str(it.Get("call_id")), Name: str(it.Get("name"))}
			if a := it.Get("arguments"); a.Type == gjson.String && a.Str != "" {
				tc.Args = []byte(a.Str)
			}
			r.ToolCalls = append(r.ToolCalls, tc)
		}
		return true
	})
	r.Text = string(text)
	r.Stop, r.RawStop = responsesStop(resp, len(r.ToolCalls) > 0)
	if u := responsesUsage(resp.Get("usage")); u != nil {
		r.Usage = *u
	}
	return r
}

// responsesStop normalises a response's status. RawStop is the status, or
// for an incomplete response the incomplete_details.reason when given.
func responsesStop(resp gjson.Result, calls bool) (hooks.StopReason, string) {
	status := str(resp.Get("status"))
	switch status {
	case "completed":
		if calls {
			return hooks.StopToolUse, status
		}
		return hooks.StopEnd, status
	case "incomplete":
		switch reason := str(resp.Get("incomplete_details.reason")); reason {
		case "max_output_tokens":
			return hooks.StopMaxTokens, reason
		case "content_filter":
			return hooks.StopRefusal, reason
		case "":
			return hooks.StopOther, status
		default:
			return hooks.StopOther, reason
		}
	case "", "in_progress", "queued":
		return hooks.StopNone, status
	}
	return hooks.StopOther, status
}

// responsesUsage normalises a usage object; nil when u is not an object.
func responsesUsage(u gjson.Result) *hooks.Usage {
	if !u.IsObject() {
		return nil
	}
	return &hooks.Usage{InputTokens: u.Get("input_tokens").Int(), OutputTokens: u.Get("output_tokens").Int()}
}

func (responsesCodec) NewStreamDecoder() StreamDecoder { return &responsesDecoder{} }

// responsesDecoder decodes Responses stream events. Index is output_index.
type responsesDecoder struct {
	out   []StreamEvent
	calls []responsesCallState
}

// responsesCallState tracks one function_call output item.
type responsesCallState struct {
	index   int
	sawArgs bool // a non-empty arguments delta arrived
}

func (d *responsesDecoder) call(index int) *responsesCallState {
	for i := len(d.calls) - 1; i >= 0; i-- {
		if d.calls[i].index == index {
			return &d.calls[i]
		}
	}
	return nil
}

// responsesItemKind maps an output item type to a block kind.
func responsesItemKind(t string) hooks.BlockKind {
	switch t {
	case "message":
		return hooks.BlockText
	case "function_call":
		return hooks.BlockToolCall
	case "reasoning":
		return hooks.BlockThinking
	}
	return hooks.BlockOther
}

func (d *responsesDecoder) Decode(ev Event) ([]StreamEvent, error) {
	d.out = d.out[:0]
	if ev.IsComment() || len(bytes.TrimSpace(ev.Data)) == 0 {
		return d.out, nil
	}
	if bytes.Equal(bytes.TrimSpace(ev.Data), doneMarker) {
		return append(d.out, StreamEvent{Kind: Done, Seq: -1}), nil
	}
	root, err := parseReplyRoot(ev.Data)
	if err != nil {
		return d.out, err
	}
	typ := root.Get("type").Str
	if typ == "" {
		typ = bstr(ev.Name)
	}
	e := StreamEvent{Seq: -1, Index: int(root.Get("output_index").Int())}
	if s := root.Get("sequence_number"); s.Type == gjson.Number {
		e.Seq = s.Int()
	}
	switch typ {
	case "response.created":
		resp := root.Get("response")
		e.Kind, e.Model, e.Usage = StreamStart, str(resp.Get("model")), responsesUsage(resp.Get("usage"))
	case "response.output_item.added", "response.output_item.done":
		item := root.Get("item")
		e.Kind, e.BlockKind = BlockStart, responsesItemKind(item.Get("type").Str)
		if typ == "response.output_item.done" {
			e.Kind = BlockStop
		}
		if e.BlockKind == hooks.BlockToolCall {
			e.ToolCallID, e.ToolName = str(item.Get("call_id")), str(item.Get("name"))
			st := d.call(e.Index)
			if e.Kind == BlockStart {
				d.calls = append(d.calls, responsesCallState{index: e.Index})
				e.ArgsDelta = str(item.Get("arguments"))
				if e.ArgsDelta != "" {
					d.calls[len(d.calls)-1].sawArgs = true
				}
			} else if st == nil || !st.sawArgs {
				e.ArgsDelta = str(item.Get("arguments")) // arguments never streamed
			}
		}
	case "response.output_text.delta":
		e.Kind, e.BlockKind, e.TextDelta = BlockDelta, hooks.BlockText, str(root.Get("delta"))
	case "response.refusal.delta":
		e.Kind, e.BlockKind, e.TextDelta = BlockDelta, hooks.BlockOther, str(root.Get("delta"))
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		e.Kind, e.BlockKind, e.TextDelta = BlockDelta, hooks.BlockThinking, str(root.Get("delta"))
	case "response.function_call_arguments.delta":
		e.Kind, e.BlockKind, e.ArgsDelta = BlockDelta, hooks.BlockToolCall, str(root.Get("delta"))
		if st := d.call(e.Index); st != nil && e.ArgsDelta != "" {
			st.sawArgs = true
		}
	case "response.completed", "response.incomplete", "response.failed":
		resp := root.Get("response")
		calls := len(d.calls) > 0
		eachElem(resp.Get("output"), func(_ int, it gjson.Result) bool {
			calls = calls || it.Get("type").Str == "function_call"
			return !calls
		})
		e.Kind, e.Usage = Finish, responsesUsage(resp.Get("usage"))
		e.Stop, e.RawStop = responsesStop(resp, calls)
		if typ == "response.failed" {
			e.ErrorMessage = str(resp.Get("error.message"))
		}
	case "error":
		e.Kind, e.ErrorMessage = Error, str(root.Get("message"))
		if !root.Get("message").Exists() {
			e.ErrorMessage = str(root.Get("error.message"))
		}
	default:
		e.Kind = Other
	}
	return append(d.out, e), nil
}
