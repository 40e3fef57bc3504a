package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file holds the Anthropic reply side: the JSON reply view and the SSE
// stream decoder.

func (anthropicCodec) ParseReply(body []byte) (*conv.Reply, error) { return parseReply(body, true) }

// ParseReplyCalls implements rewrite.ReplyCallsParser.
func (anthropicCodec) ParseReplyCalls(body []byte) (*conv.Reply, error) {
	return parseReply(body, false)
}

// parseReply is ParseReply, with the text decoded only when withText.
func parseReply(body []byte, withText bool) (*conv.Reply, error) {
	root, err := rewrite.ParseReplyRoot(body)
	if err != nil {
		return nil, err
	}
	var top [4]gjson.Result // one pass over the reply (gjson's Get walks it per key)
	jsonkit.Members(root, replyKeys, top[:])
	r := &conv.Reply{Model: jsonkit.Name(top[0])}
	var text rewrite.TextParts
	var kv [2]gjson.Result
	jsonkit.EachElement(top[1], func(_ int, b gjson.Result) bool {
		kv = [2]gjson.Result{}
		jsonkit.MembersRaw(b, blockTextKeys, kv[:])
		switch jsonkit.StringOf(kv[0]) {
		case "text":
			text.Add(kv[1])
		case "tool_use":
			r.ToolCalls = append(r.ToolCalls, conv.ToolCall{
				Index: len(r.ToolCalls), ID: jsonkit.OwnedString(b.Get("id")), Name: jsonkit.OwnedString(b.Get("name")),
				Args: jsonkit.OwnedRaw(b.Get("input")),
			})
		}
		return true
	})
	if withText {
		r.Text = text.String()
	}
	r.RawStop = jsonkit.OwnedString(top[2])
	r.Stop = anthropicStop(r.RawStop)
	if u := anthropicUsage(top[3]); u != nil {
		r.Usage = *u
	}
	return r, nil
}

// replyKeys are the members ParseReply reads of the reply.
var replyKeys = []string{"model", "content", "stop_reason", "usage"}

// blockTextKeys are the members ParseReply reads of every content block.
var blockTextKeys = []string{"type", "text"}

// anthropicStop normalises a stop_reason.
func anthropicStop(s string) conv.StopReason {
	switch s {
	case "":
		return conv.StopNone
	case "end_turn":
		return conv.StopEnd
	case "max_tokens":
		return conv.StopMaxTokens
	case "stop_sequence":
		return conv.StopSequence
	case "tool_use":
		return conv.StopToolUse
	case "pause_turn":
		return conv.StopPause
	case "refusal":
		return conv.StopRefusal
	case "model_context_window_exceeded":
		return conv.StopContextWindow
	}
	return conv.StopOther
}

// anthropicUsage normalises a usage object: input_tokens (already without
// the cached part), output_tokens, cache_read_input_tokens and
// cache_creation_input_tokens. nil when u is not an object.
func anthropicUsage(u gjson.Result) *conv.Usage {
	if !u.IsObject() {
		return nil
	}
	return &conv.Usage{
		InputTokens:      u.Get("input_tokens").Int(),
		OutputTokens:     u.Get("output_tokens").Int(),
		CacheReadTokens:  u.Get("cache_read_input_tokens").Int(),
		CacheWriteTokens: u.Get("cache_creation_input_tokens").Int(),
	}
}

func (anthropicCodec) NewStreamDecoder() rewrite.StreamDecoder { return &anthropicDecoder{} }

// anthropicDecoder decodes Anthropic Messages SSE events.
type anthropicDecoder struct {
	out    []rewrite.StreamEvent
	blocks []anthropicBlockState
}

// anthropicBlockState remembers what a content_block_start said about a
// block, for its deltas and its stop.
type anthropicBlockState struct {
	index      int
	kind       conv.BlockKind
	startInput string // tool_use input as given at start ("{}" normally)
	sawArgs    bool   // a non-empty input_json_delta arrived
}

func (d *anthropicDecoder) block(index int) *anthropicBlockState {
	for i := len(d.blocks) - 1; i >= 0; i-- {
		if d.blocks[i].index == index {
			return &d.blocks[i]
		}
	}
	return nil
}

func (d *anthropicDecoder) Decode(ev rewrite.Event) ([]rewrite.StreamEvent, error) {
	d.out = d.out[:0]
	if ev.IsComment() {
		return d.out, nil
	}
	if len(ev.Data) == 0 {
		if string(ev.Name) == "ping" {
			return append(d.out, rewrite.StreamEvent{Kind: rewrite.Ping, Seq: -1}), nil
		}
		return append(d.out, rewrite.StreamEvent{Kind: rewrite.Other, Seq: -1}), nil
	}
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return d.out, err
	}
	typ := root.Get("type").Str
	if typ == "" {
		typ = jsonkit.UnsafeString(ev.Name)
	}
	e := rewrite.StreamEvent{Seq: -1}
	switch typ {
	case "message_start":
		msg := root.Get("message")
		e.Kind, e.Model, e.Usage = rewrite.StreamStart, jsonkit.OwnedString(msg.Get("model")), anthropicUsage(msg.Get("usage"))
	case "content_block_start":
		e.Kind, e.Index = rewrite.BlockStart, int(root.Get("index").Int())
		cb := root.Get("content_block")
		st := anthropicBlockState{index: e.Index, kind: conv.BlockOther}
		switch cb.Get("type").Str {
		case "text":
			st.kind, e.TextDelta = conv.BlockText, jsonkit.OwnedString(cb.Get("text"))
		case "thinking":
			st.kind, e.TextDelta = conv.BlockThinking, jsonkit.OwnedString(cb.Get("thinking"))
		case "redacted_thinking":
			st.kind = conv.BlockThinking
		case "tool_use":
			st.kind = conv.BlockToolCall
			e.ToolCallID, e.ToolName = jsonkit.OwnedString(cb.Get("id")), jsonkit.OwnedString(cb.Get("name"))
			st.startInput = cb.Get("input").Raw
		}
		e.BlockKind = st.kind
		st.startInput = strings.Clone(st.startInput) // stop aliasing ev.Data
		d.blocks = append(d.blocks, st)
	case "content_block_delta":
		e.Kind, e.Index = rewrite.BlockDelta, int(root.Get("index").Int())
		st := d.block(e.Index)
		delta := root.Get("delta")
		switch delta.Get("type").Str {
		case "text_delta":
			e.BlockKind, e.TextDelta = conv.BlockText, jsonkit.OwnedString(delta.Get("text"))
		case "thinking_delta":
			e.BlockKind, e.TextDelta = conv.BlockThinking, jsonkit.OwnedString(delta.Get("thinking"))
		case "signature_delta":
			e.BlockKind = conv.BlockThinking
		case "input_json_delta":
			e.BlockKind, e.ArgsDelta = conv.BlockToolCall, jsonkit.OwnedString(delta.Get("partial_json"))
			if st != nil {
				e.BlockKind = st.kind // server_tool_use input streams too
				if e.ArgsDelta != "" {
					st.sawArgs = true
				}
			}
		default:
			e.BlockKind = conv.BlockOther
			if st != nil {
				e.BlockKind = st.kind
			}
		}
	case "content_block_stop":
		e.Kind, e.Index, e.BlockKind = rewrite.BlockStop, int(root.Get("index").Int()), conv.BlockOther
		if st := d.block(e.Index); st != nil {
			e.BlockKind = st.kind
			if st.kind == conv.BlockToolCall && !st.sawArgs {
				e.ArgsDelta = st.startInput
			}
		}
	case "message_delta":
		e.Usage = anthropicUsage(root.Get("usage"))
		e.Kind = rewrite.Usage
		if sr := root.Get("delta.stop_reason"); sr.Type == gjson.String {
			e.Kind, e.RawStop = rewrite.Finish, jsonkit.OwnedString(sr)
			e.Stop = anthropicStop(e.RawStop)
		} else if e.Usage == nil {
			e.Kind = rewrite.Other
		}
	case "message_stop":
		e.Kind = rewrite.Done
	case "ping":
		e.Kind = rewrite.Ping
	case "error":
		e.Kind, e.ErrorMessage = rewrite.Error, jsonkit.OwnedString(root.Get("error.message"))
	default:
		e.Kind = rewrite.Other
	}
	return append(d.out, e), nil
}
