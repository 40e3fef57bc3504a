package responses

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file holds the Responses reply side: the response object view and the
// typed SSE event decoder.

func (responsesCodec) ParseReply(body []byte) (*conv.Reply, error) {
	root, err := rewrite.ParseReplyRoot(body)
	if err != nil {
		return nil, err
	}
	return responsesReply(root), nil
}

// ParseReplyCalls implements rewrite.ReplyCallsParser.
func (responsesCodec) ParseReplyCalls(body []byte) (*conv.Reply, error) {
	root, err := rewrite.ParseReplyRoot(body)
	if err != nil {
		return nil, err
	}
	return responsesReplyText(root, false), nil
}

// partTextKeys are the members responsesReply reads of every content part.
var partTextKeys = []string{"type", "text"}

// responsesReply views a response object (a reply body, or the response of a
// terminal stream event).
func responsesReply(resp gjson.Result) *conv.Reply { return responsesReplyText(resp, true) }

// responsesReplyText is responsesReply, with the text decoded only when
// withText.
func responsesReplyText(resp gjson.Result, withText bool) *conv.Reply {
	r := &conv.Reply{Model: jsonkit.Name(resp.Get("model"))}
	var text rewrite.TextParts
	var kv [2]gjson.Result
	jsonkit.EachElement(resp.Get("output"), func(_ int, it gjson.Result) bool {
		switch it.Get("type").Str {
		case "message":
			jsonkit.EachElement(it.Get("content"), func(_ int, p gjson.Result) bool {
				kv = [2]gjson.Result{}
				if jsonkit.MembersRaw(p, partTextKeys, kv[:]); jsonkit.StringOf(kv[0]) == "output_text" {
					text.Add(kv[1])
				}
				return true
			})
		case "function_call":
			tc := conv.ToolCall{Index: len(r.ToolCalls), ID: jsonkit.OwnedString(it.Get("call_id")), Name: jsonkit.OwnedString(it.Get("name"))}
			if a := jsonkit.Member(it, "arguments"); a.Type == gjson.String && a.Str != "" {
				tc.Args = []byte(a.Str)
			}
			r.ToolCalls = append(r.ToolCalls, tc)
		case "custom_tool_call":
			tc := conv.ToolCall{Index: len(r.ToolCalls), ID: jsonkit.OwnedString(it.Get("call_id")), Name: jsonkit.OwnedString(it.Get("name")), Freeform: true}
			if in := it.Get("input"); in.Type == gjson.String {
				tc.Args = freeformArgs(in.Str)
			}
			r.ToolCalls = append(r.ToolCalls, tc)
		}
		return true
	})
	if withText {
		r.Text = text.String()
	}
	r.Stop, r.RawStop = responsesStop(resp, len(r.ToolCalls) > 0)
	if u := responsesUsage(resp.Get("usage")); u != nil {
		r.Usage = *u
	}
	return r
}

// responsesStop normalises a response's status. RawStop is the status, or
// for an incomplete response the incomplete_details.reason when given.
func responsesStop(resp gjson.Result, calls bool) (conv.StopReason, string) {
	status := jsonkit.OwnedString(resp.Get("status"))
	switch status {
	case "completed":
		if calls {
			return conv.StopToolUse, status
		}
		return conv.StopEnd, status
	case "incomplete":
		switch reason := jsonkit.OwnedString(resp.Get("incomplete_details.reason")); reason {
		case "max_output_tokens":
			return conv.StopMaxTokens, reason
		case "content_filter":
			return conv.StopRefusal, reason
		case "":
			return conv.StopOther, status
		default:
			return conv.StopOther, reason
		}
	case "", "in_progress", "queued":
		return conv.StopNone, status
	}
	return conv.StopOther, status
}

// responsesUsage normalises a usage object; nil when u is not an object.
func responsesUsage(u gjson.Result) *conv.Usage {
	if !u.IsObject() {
		return nil
	}
	cached := u.Get("input_tokens_details.cached_tokens").Int()
	return &conv.Usage{
		InputTokens:     max(0, u.Get("input_tokens").Int()-cached),
		OutputTokens:    u.Get("output_tokens").Int(),
		CacheReadTokens: cached,
	}
}

func (responsesCodec) NewStreamDecoder() rewrite.StreamDecoder { return &responsesDecoder{} }

// responsesDecoder decodes Responses stream events. Index is output_index.
//
// A custom_tool_call's free-text input is reported as the arguments object
// the reply view gives it ({"input":"<text>"}): its BlockStart opens the
// object, each input delta adds its text JSON-escaped, and its BlockStop
// closes the object, so the accumulated arguments equal ParseReply's.
// (StreamEvent has no field for ToolCall.Freeform.)
type responsesDecoder struct {
	out   []rewrite.StreamEvent
	calls []responsesCallState
}

// responsesCallState tracks one function_call or custom_tool_call output
// item.
type responsesCallState struct {
	index   int
	sawArgs bool // a non-empty arguments (or input) delta arrived
	custom  bool // a custom_tool_call: its arguments object is open
}

// freeformOpen starts the arguments object of a custom call.
const freeformOpen = `{"input":"`

// freeformFragment returns text JSON-escaped, without quotes: a piece of
// the input string of freeformArgs.
func freeformFragment(text string) string {
	if text == "" {
		return ""
	}
	b := jsonkit.AppendString(make([]byte, 0, len(text)+2), text)
	return string(b[1 : len(b)-1])
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
func responsesItemKind(t string) conv.BlockKind {
	switch t {
	case "message":
		return conv.BlockText
	case "function_call", "custom_tool_call":
		return conv.BlockToolCall
	case "reasoning":
		return conv.BlockThinking
	}
	return conv.BlockOther
}

func (d *responsesDecoder) Decode(ev rewrite.Event) ([]rewrite.StreamEvent, error) {
	d.out = d.out[:0]
	if ev.IsComment() || len(bytes.TrimSpace(ev.Data)) == 0 {
		return d.out, nil
	}
	if bytes.Equal(bytes.TrimSpace(ev.Data), rewrite.DoneData) {
		return append(d.out, rewrite.StreamEvent{Kind: rewrite.Done, Seq: -1}), nil
	}
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return d.out, err
	}
	typ := root.Get("type").Str
	if typ == "" {
		typ = jsonkit.UnsafeString(ev.Name)
	}
	e := rewrite.StreamEvent{Seq: -1, Index: int(root.Get("output_index").Int())}
	if s := root.Get("sequence_number"); s.Type == gjson.Number {
		e.Seq = s.Int()
	}
	switch typ {
	case "response.created":
		resp := root.Get("response")
		e.Kind, e.Model, e.Usage = rewrite.StreamStart, jsonkit.OwnedString(resp.Get("model")), responsesUsage(resp.Get("usage"))
	case "response.output_item.added", "response.output_item.done":
		item := root.Get("item")
		e.Kind, e.BlockKind = rewrite.BlockStart, responsesItemKind(item.Get("type").Str)
		if typ == "response.output_item.done" {
			e.Kind = rewrite.BlockStop
		}
		if e.BlockKind == conv.BlockToolCall && item.Get("type").Str == "custom_tool_call" {
			e.ToolCallID, e.ToolName = jsonkit.OwnedString(item.Get("call_id")), jsonkit.OwnedString(item.Get("name"))
			input := jsonkit.OwnedString(item.Get("input"))
			st := d.call(e.Index)
			switch {
			case e.Kind == rewrite.BlockStart:
				d.calls = append(d.calls, responsesCallState{index: e.Index, custom: true, sawArgs: input != ""})
				e.ArgsDelta = freeformOpen + freeformFragment(input)
			case st == nil || !st.custom:
				e.ArgsDelta = string(freeformArgs(input)) // never opened as a custom call
			case !st.sawArgs:
				e.ArgsDelta = freeformFragment(input) + `"}` // input never streamed
			default:
				e.ArgsDelta = `"}`
			}
			if st != nil && e.Kind == rewrite.BlockStop {
				st.custom = false // closed
			}
		} else if e.BlockKind == conv.BlockToolCall {
			e.ToolCallID, e.ToolName = jsonkit.OwnedString(item.Get("call_id")), jsonkit.OwnedString(item.Get("name"))
			st := d.call(e.Index)
			if e.Kind == rewrite.BlockStart {
				d.calls = append(d.calls, responsesCallState{index: e.Index})
				e.ArgsDelta = jsonkit.OwnedString(item.Get("arguments"))
				if e.ArgsDelta != "" {
					d.calls[len(d.calls)-1].sawArgs = true
				}
			} else if st == nil || !st.sawArgs {
				e.ArgsDelta = jsonkit.OwnedString(item.Get("arguments")) // arguments never streamed
			}
		}
	case "response.output_text.delta":
		e.Kind, e.BlockKind, e.TextDelta = rewrite.BlockDelta, conv.BlockText, jsonkit.OwnedString(root.Get("delta"))
	case "response.refusal.delta":
		e.Kind, e.BlockKind, e.TextDelta = rewrite.BlockDelta, conv.BlockOther, jsonkit.OwnedString(root.Get("delta"))
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		e.Kind, e.BlockKind, e.TextDelta = rewrite.BlockDelta, conv.BlockThinking, jsonkit.OwnedString(root.Get("delta"))
	case "response.function_call_arguments.delta":
		e.Kind, e.BlockKind, e.ArgsDelta = rewrite.BlockDelta, conv.BlockToolCall, jsonkit.OwnedString(root.Get("delta"))
		if st := d.call(e.Index); st != nil && e.ArgsDelta != "" {
			st.sawArgs = true
		}
	case "response.custom_tool_call_input.delta":
		delta := jsonkit.OwnedString(root.Get("delta"))
		e.Kind, e.BlockKind, e.ArgsDelta = rewrite.BlockDelta, conv.BlockToolCall, freeformFragment(delta)
		st := d.call(e.Index)
		if st == nil || !st.custom {
			// A delta of a call that was never opened: open it here.
			d.calls = append(d.calls, responsesCallState{index: e.Index, custom: true})
			st = &d.calls[len(d.calls)-1]
			e.ArgsDelta = freeformOpen + e.ArgsDelta
		}
		if delta != "" {
			st.sawArgs = true
		}
	case "response.completed", "response.incomplete", "response.failed":
		resp := root.Get("response")
		calls := len(d.calls) > 0
		jsonkit.EachElement(resp.Get("output"), func(_ int, it gjson.Result) bool {
			calls = calls || responsesCallType(it.Get("type").Str)
			return !calls
		})
		e.Kind, e.Usage = rewrite.Finish, responsesUsage(resp.Get("usage"))
		e.Stop, e.RawStop = responsesStop(resp, calls)
		if typ == "response.failed" {
			e.ErrorMessage = jsonkit.OwnedString(resp.Get("error.message"))
		}
	case "error":
		e.Kind, e.ErrorMessage = rewrite.Error, jsonkit.OwnedString(root.Get("message"))
		if !root.Get("message").Exists() {
			e.ErrorMessage = jsonkit.OwnedString(root.Get("error.message"))
		}
	default:
		e.Kind = rewrite.Other
	}
	return append(d.out, e), nil
}
