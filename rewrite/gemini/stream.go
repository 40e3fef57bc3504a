package gemini

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file holds the Gemini reply side: the GenerateContentResponse view
// and the chunk decoder (for alt=sse data events and JSON-array elements).
// Only the first candidate is viewed.

// partTextKeys are the members ParseReply reads of every part for its text.
var partTextKeys = []string{"text", "thought"}

func (geminiCodec) ParseReply(body []byte) (*conv.Reply, error) { return parseReply(body, true) }

// ParseReplyCalls implements rewrite.ReplyCallsParser.
func (geminiCodec) ParseReplyCalls(body []byte) (*conv.Reply, error) { return parseReply(body, false) }

// parseReply is ParseReply, with the text decoded only when withText.
func parseReply(body []byte, withText bool) (*conv.Reply, error) {
	root, err := rewrite.ParseReplyRoot(body)
	if err != nil {
		return nil, err
	}
	r := &conv.Reply{Model: jsonkit.Name(root.Get("modelVersion"))}
	cand := root.Get("candidates.0")
	var text rewrite.TextParts
	var kv [2]gjson.Result
	jsonkit.EachElement(cand.Get("content.parts"), func(_ int, p gjson.Result) bool {
		kv = [2]gjson.Result{}
		if jsonkit.MembersRaw(p, partTextKeys, kv[:]); !kv[1].Bool() {
			text.Add(kv[0])
		}
		if fc, _ := either(p, "functionCall", "function_call"); fc.IsObject() {
			r.ToolCalls = append(r.ToolCalls, conv.ToolCall{Index: len(r.ToolCalls),
				ID: jsonkit.OwnedString(fc.Get("id")), Name: jsonkit.OwnedString(fc.Get("name")), Args: jsonkit.OwnedRaw(fc.Get("args"))})
		}
		return true
	})
	if withText {
		r.Text = text.String()
	}
	fr, _ := either(cand, "finishReason", "finish_reason")
	r.RawStop = jsonkit.OwnedString(fr)
	r.Stop = geminiStop(r.RawStop, len(r.ToolCalls) > 0)
	if !cand.Exists() {
		if br := root.Get("promptFeedback.blockReason"); br.Type == gjson.String {
			r.RawStop, r.Stop = jsonkit.OwnedString(br), conv.StopRefusal // the prompt was blocked
		}
	}
	if u := geminiUsage(root.Get("usageMetadata")); u != nil {
		r.Usage = *u
	}
	return r, nil
}

// geminiStop normalises a finishReason; STOP with function calls is a tool
// use.
func geminiStop(s string, calls bool) conv.StopReason {
	switch s {
	case "":
		return conv.StopNone
	case "STOP":
		if calls {
			return conv.StopToolUse
		}
		return conv.StopEnd
	case "MAX_TOKENS":
		return conv.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
		"MODEL_ARMOR", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return conv.StopRefusal
	}
	return conv.StopOther
}

// geminiUsage normalises usageMetadata: input counts the prompt and
// tool-use prompt tokens without the cached part (cachedContentTokenCount,
// the cache read); output counts candidates and thoughts. nil when u is not
// an object.
func geminiUsage(u gjson.Result) *conv.Usage {
	if !u.IsObject() {
		return nil
	}
	cached := u.Get("cachedContentTokenCount").Int()
	return &conv.Usage{
		InputTokens:     max(0, u.Get("promptTokenCount").Int()+u.Get("toolUsePromptTokenCount").Int()-cached),
		OutputTokens:    u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int(),
		CacheReadTokens: cached,
	}
}

func (geminiCodec) NewStreamDecoder() rewrite.StreamDecoder { return &geminiDecoder{} }

// geminiDecoder decodes streamed GenerateContentResponse chunks. Text parts
// are BlockDelta events; each functionCall part (always whole) is a
// BlockStart carrying its args followed by a BlockStop.
type geminiDecoder struct {
	out     []rewrite.StreamEvent
	started bool
	calls   bool // a functionCall part has been seen
}

func (d *geminiDecoder) Decode(ev rewrite.Event) ([]rewrite.StreamEvent, error) {
	d.out = d.out[:0]
	if len(bytes.TrimSpace(ev.Data)) == 0 {
		return d.out, nil
	}
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return d.out, err
	}
	if e := root.Get("error"); e.IsObject() {
		return append(d.out, rewrite.StreamEvent{Kind: rewrite.Error, Seq: -1, ErrorMessage: jsonkit.OwnedString(e.Get("message"))}), nil
	}
	if !d.started {
		d.started = true
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.StreamStart, Seq: -1, Model: jsonkit.OwnedString(root.Get("modelVersion"))})
	}
	cand := root.Get("candidates.0")
	i := 0
	jsonkit.EachElement(cand.Get("content.parts"), func(_ int, p gjson.Result) bool {
		idx := i
		i++
		if t := p.Get("text"); t.Type == gjson.String {
			kind := conv.BlockText
			if p.Get("thought").Bool() {
				kind = conv.BlockThinking
			}
			d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.BlockDelta, Seq: -1, Index: idx, BlockKind: kind, TextDelta: jsonkit.OwnedString(t)})
			return true
		}
		if fc, _ := either(p, "functionCall", "function_call"); fc.IsObject() {
			d.calls = true
			d.out = append(d.out,
				rewrite.StreamEvent{Kind: rewrite.BlockStart, Seq: -1, Index: idx, BlockKind: conv.BlockToolCall,
					ToolCallID: jsonkit.OwnedString(fc.Get("id")), ToolName: jsonkit.OwnedString(fc.Get("name")),
					ArgsDelta: strings.Clone(fc.Get("args").Raw)},
				rewrite.StreamEvent{Kind: rewrite.BlockStop, Seq: -1, Index: idx, BlockKind: conv.BlockToolCall})
		}
		return true
	})
	usage := geminiUsage(root.Get("usageMetadata"))
	if fr, _ := either(cand, "finishReason", "finish_reason"); fr.Type == gjson.String && fr.Str != "" {
		raw := jsonkit.OwnedString(fr)
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.Finish, Seq: -1, Stop: geminiStop(raw, d.calls), RawStop: raw, Usage: usage})
	} else if usage != nil {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.Usage, Seq: -1, Usage: usage})
	}
	if len(d.out) == 0 {
		d.out = append(d.out, rewrite.StreamEvent{Kind: rewrite.Other, Seq: -1})
	}
	return d.out, nil
}
