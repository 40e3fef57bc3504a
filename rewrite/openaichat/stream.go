package openaichat

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file holds the OpenAI Chat reply side: the JSON reply view and the
// data-only SSE chunk decoder. Only choice 0 is viewed (agents send n=1).

func (chatCodec) ParseReply(body []byte) (*conv.Reply, error) { return parseReply(body, true) }

// ParseReplyCalls implements rewrite.ReplyCallsParser.
func (chatCodec) ParseReplyCalls(body []byte) (*conv.Reply, error) { return parseReply(body, false) }

// parseReply is ParseReply, with the text decoded only when withText.
func parseReply(body []byte, withText bool) (*conv.Reply, error) {
	root, err := rewrite.ParseReplyRoot(body)
	if err != nil {
		return nil, err
	}
	var top [3]gjson.Result // one pass over the reply (gjson's Get walks it per key)
	jsonkit.Members(root, replyKeys, top[:])
	r := &conv.Reply{Model: jsonkit.Name(top[0])}
	var ch [2]gjson.Result
	jsonkit.Members(firstChoice(top[1]), choiceKeys, ch[:])
	var mc [2]gjson.Result
	jsonkit.MembersRaw(ch[0], messageKeys, mc[:])
	switch c := mc[0]; {
	case !withText:
	case c.Type == gjson.String:
		var text rewrite.TextParts
		text.Add(c)
		r.Text = text.String()
	default:
		r.Text = rewrite.ResultText(c, "text", "text")
	}
	jsonkit.EachElement(mc[1], func(_ int, c gjson.Result) bool {
		tc := conv.ToolCall{Index: len(r.ToolCalls), ID: jsonkit.OwnedString(c.Get("id")), Name: jsonkit.OwnedString(c.Get("function.name"))}
		if a := jsonkit.Member(c.Get("function"), "arguments"); a.Type == gjson.String && a.Str != "" {
			tc.Args = []byte(a.Str)
		}
		r.ToolCalls = append(r.ToolCalls, tc)
		return true
	})
	r.RawStop = jsonkit.OwnedString(ch[1])
	r.Stop = chatStop(r.RawStop)
	if u := chatUsage(top[2]); u != nil {
		r.Usage = *u
	}
	return r, nil
}

// firstChoice returns the choice with index 0 (or the first one listed).
func firstChoice(choices gjson.Result) gjson.Result {
	var first gjson.Result
	jsonkit.EachElement(choices, func(_ int, c gjson.Result) bool {
		index := jsonkit.Member(c, "index").Int()
		if !first.Exists() || index == 0 {
			first = c
		}
		return index != 0
	})
	return first
}

// The members ParseReply reads of the reply, its first choice and that
// choice's message.
var (
	replyKeys   = []string{"model", "choices", "usage"}
	choiceKeys  = []string{"message", "finish_reason"}
	messageKeys = []string{"content", "tool_calls"}
)

// chatStop normalises a finish_reason.
func chatStop(s string) conv.StopReason {
	switch s {
	case "":
		return conv.StopNone
	case "stop":
		return conv.StopEnd
	case "length":
		return conv.StopMaxTokens
	case "tool_calls", "function_call":
		return conv.StopToolUse
	case "content_filter":
		return conv.StopRefusal
	}
	return conv.StopOther
}

// chatUsage normalises a usage object (prompt_tokens already counts cached
// tokens); nil when u is not an object.
func chatUsage(u gjson.Result) *conv.Usage {
	if !u.IsObject() {
		return nil
	}
	cached := u.Get("prompt_tokens_details.cached_tokens").Int()
	return &conv.Usage{
		InputTokens:     max(0, u.Get("prompt_tokens").Int()-cached),
		OutputTokens:    u.Get("completion_tokens").Int(),
		CacheReadTokens: cached,
	}
}

func (chatCodec) NewStreamDecoder() rewrite.StreamDecoder { return &chatDecoder{} }

// chatDecoder decodes chat.completion.chunk events. Chat has no block
// boundaries: it reports a tool call's BlockStart when the call's index
// first appears and BlockStop for every open call when finish_reason
// arrives; text comes as BlockDelta events of index 0.
type chatDecoder struct {
	out     []rewrite.StreamEvent
	started bool
	open    []int // tool-call indices started and not yet stopped
}

func (d *chatDecoder) Decode(ev rewrite.Event) ([]rewrite.StreamEvent, error) {
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
	choices := root.Get("choices")
	if e := root.Get("error"); !jsonkit.IsNull(e) && jsonkit.LastValueEnd(choices) < 0 {
		msg := e.Get("message")
		if e.Type == gjson.String {
			msg = e
		}
		return append(d.out, rewrite.StreamEvent{Kind: rewrite.Error, Seq: -1, ErrorMessage: jsonkit.OwnedString(msg)}), nil
	}
	if !d.started {
		d.started = true
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.StreamStart, Seq: -1, Model: jsonkit.OwnedString(root.Get("model"))})
	}
	usage := chatUsage(root.Get("usage"))
	finished := false
	jsonkit.EachElement(choices, func(_ int, c gjson.Result) bool {
		if c.Get("index").Int() != 0 {
			return true // another of n choices: not viewed
		}
		finished = d.choice(c, usage)
		return false
	})
	if usage != nil && !finished {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.Usage, Seq: -1, Usage: usage})
	}
	if len(d.out) == 0 {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.Other, Seq: -1})
	}
	return d.out, nil
}

// choice decodes the delta and finish_reason of choice 0 and reports
// whether a Finish (carrying usage) was emitted.
func (d *chatDecoder) choice(c gjson.Result, usage *conv.Usage) bool {
	delta := c.Get("delta")
	for _, k := range [...]string{"reasoning_content", "reasoning"} {
		if t := delta.Get(k); t.Type == gjson.String && t.Str != "" {
			d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.BlockDelta, Seq: -1, BlockKind: conv.BlockThinking, TextDelta: jsonkit.OwnedString(t)})
		}
	}
	if t := delta.Get("content"); t.Type == gjson.String && t.Str != "" {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.BlockDelta, Seq: -1, BlockKind: conv.BlockText, TextDelta: jsonkit.OwnedString(t)})
	}
	if t := delta.Get("refusal"); t.Type == gjson.String && t.Str != "" {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.BlockDelta, Seq: -1, BlockKind: conv.BlockOther, TextDelta: jsonkit.OwnedString(t)})
	}
	pos := 0
	jsonkit.EachElement(delta.Get("tool_calls"), func(_ int, tc gjson.Result) bool {
		idx := pos
		if i := tc.Get("index"); i.Type == gjson.Number {
			idx = int(i.Int())
		}
		pos++
		e := rewrite.StreamEvent{Kind: rewrite.BlockDelta, Seq: -1, Index: idx, BlockKind: conv.BlockToolCall,
			ToolCallID: jsonkit.OwnedString(tc.Get("id")), ToolName: jsonkit.OwnedString(tc.Get("function.name")),
			ArgsDelta: jsonkit.OwnedString(tc.Get("function.arguments"))}
		if !d.isOpen(idx) {
			e.Kind = rewrite.BlockStart
			d.open = append(d.open, idx)
		}
		d.out = append(d.out, e)
		return true
	})
	fr := c.Get("finish_reason")
	if fr.Type != gjson.String || fr.Str == "" {
		return false
	}
	for _, idx := range d.open {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.BlockStop, Seq: -1, Index: idx, BlockKind: conv.BlockToolCall})
	}
	d.open = d.open[:0]
	raw := jsonkit.OwnedString(fr)
	d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.Finish, Seq: -1, Stop: chatStop(raw), RawStop: raw, Usage: usage})
	return true
}

func (d *chatDecoder) isOpen(idx int) bool {
	for _, i := range d.open {
		if i == idx {
			return true
		}
	}
	return false
}
