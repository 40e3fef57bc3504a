package openaichat

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Chat Completions side of ContinueCodec. A Chat
// message has one text value (content, a string, or in rare replies an
// array of parts): a continuation always runs on in it, whatever tool calls
// the message also carries. Reasoning (reasoning_content, reasoning) is the
// thinking here; refusal and tool calls are the other blocks.

var _ rewrite.ContinueCodec = chatCodec{}

// ContinuationMessages returns ReplyAsMessages' assistant message without
// tool_calls and the deprecated function_call; content, refusal and
// reasoning_content stay byte for byte. Chat's assistant input has no
// finish state, so nothing else changes. With prefill the last text (the
// content string, or the last text part) is right-trimmed of whitespace by
// cutting its JSON literal, so the bytes kept are the reply's; a text part
// left empty is dropped and the part before it trimmed in turn. No
// provider-specific prefix flag is added: servers that continue a trailing
// assistant message do so without it. hasText is false (and items nil)
// SideIf no non-empty text remains.
func (c chatCodec) ContinuationMessages(reply []byte, prefill bool) ([][]byte, bool, error) {
	items, err := c.ReplyAsMessages(reply)
	if err != nil {
		return nil, false, err
	}
	item := items[0]
	for _, key := range [...]string{"tool_calls", "function_call"} {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(item))
		item = rewrite.OpenAIDeleteMember(item, root, key)
	}
	if prefill {
		item = chatTrimLastText(item)
	}
	root, _ := jsonkit.RootObject(jsonkit.UnsafeString(item))
	if !chatHasText(root.Get("content")) {
		return nil, false, nil
	}
	return [][]byte{item}, true, nil
}

// chatTrimLastText right-trims the last text of msg's content (a string, or
// the last text part), dropping text parts the trim leaves empty.
func chatTrimLastText(msg []byte) []byte {
	for {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(msg))
		content := root.Get("content")
		if content.Type == gjson.String {
			if t := chatTrimRawRight(content.Raw); t != content.Raw {
				msg = jsonkit.Splice(msg, content.Index, jsonkit.ValueEnd(content), []byte(t))
			}
			return msg
		}
		elems := rewrite.BlocksElems(content)
		i := len(elems) - 1
		for i >= 0 && !chatIsTextPart(elems[i]) {
			i--
		}
		if i < 0 {
			return msg
		}
		text := elems[i].Get("text")
		t := chatTrimRawRight(text.Raw)
		if t != `""` {
			if t != text.Raw {
				msg = jsonkit.Splice(msg, text.Index, jsonkit.ValueEnd(text), []byte(t))
			}
			return msg
		}
		msg = rewrite.OpenAISpliceElems(msg, content, elems, i, i+1, nil)
	}
}

// chatIsTextPart reports whether p is a {"type":"text","text":"…"} part.
func chatIsTextPart(p gjson.Result) bool {
	return p.IsObject() && p.Get("type").Str == "text" && p.Get("text").Type == gjson.String
}

// chatHasText reports whether content holds non-empty text.
func chatHasText(content gjson.Result) bool {
	if content.Type == gjson.String {
		return content.Str != ""
	}
	has := false
	jsonkit.EachElement(content, func(_ int, p gjson.Result) bool {
		has = chatIsTextPart(p) && p.Get("text").Str != ""
		return !has
	})
	return has
}

// chatTrimRawRight returns the JSON string literal raw (valid, quotes
// included) without the trailing characters that decode to whitespace,
// escaped or not; the bytes kept are raw's.
func chatTrimRawRight(raw string) string {
	if len(raw) < 2 {
		return raw
	}
	body := raw[1 : len(raw)-1]
	cut := 0 // end of the last non-space character
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRuneInString(body[i:])
		if body[i] == '\\' && i+1 < len(body) {
			r, n = rune(body[i+1]), 2
			switch body[i+1] {
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'f':
				r = '\f'
			case 'b':
				r = '\b'
			case 'u':
				if i+6 <= len(body) {
					v, err := strconv.ParseUint(body[i+2:i+6], 16, 32)
					r, n = rune(v), 6
					if err != nil {
						r = utf8.RuneError
					}
				}
			}
		}
		i += n
		if !unicode.IsSpace(r) {
			cut = i
		}
	}
	return raw[:1+cut] + `"`
}

// UserTextMessage returns {"role":"user","content":text}.
func (chatCodec) UserTextMessage(text string) ([]byte, error) {
	return chatTextMessage("user", []string{text}), nil
}

// ContinueReply returns acc with next's reply run on into it: next's first
// text (its content string, or its first part when that is a text part) is
// appended to acc's last text (the content string, or its last part when
// that is a text part) with the seam trimmed (TrimSeam); next's other
// content parts follow acc's as MergeReplies appends them (text meeting no
// text of acc is appended as is). next's reasoning_content and reasoning are
// dropped (acc's stay); refusal is concatenated, tool_calls appended and a
// function_call taken when acc has none, as other blocks; finish_reason is
// next's and usage is merged as MergeReplies merges it. Every other byte is
// acc's, and next's text literal is kept byte for byte when nothing is
// trimmed from it.
func (chatCodec) ContinueReply(acc, next []byte) ([]byte, error) {
	_, nroot, nchoice, nmsg, err := chatReplyPair(acc, next)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), acc...)
	cur := func() (root, choice, msg gjson.Result) {
		root, _ = jsonkit.RootObject(jsonkit.UnsafeString(out))
		choice = firstChoice(root.Get("choices"))
		return root, choice, choice.Get("message")
	}

	_, _, msg := cur()
	content, err := chatContinueText(msg.Get("content"), nmsg.Get("content"))
	if err != nil {
		return nil, err
	}
	if content != nil {
		out = jsonkit.SetMember(out, msg, "content", content)
	}
	_, _, msg = cur()
	refusal, err := rewrite.OpenAIMergeText(msg.Get("refusal"), nmsg.Get("refusal"), "refusal")
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		out = jsonkit.SetMember(out, msg, "refusal", refusal)
	}

	out, err = chatAppendToolCalls(out, nmsg, func() gjson.Result { _, _, msg := cur(); return msg })
	if err != nil {
		return nil, err
	}
	if fn := nmsg.Get("function_call"); fn.IsObject() {
		if _, _, msg := cur(); jsonkit.IsNull(msg.Get("function_call")) {
			out = jsonkit.SetMember(out, msg, "function_call", []byte(fn.Raw))
		}
	}
	if fr := nchoice.Get("finish_reason"); fr.Exists() {
		_, choice, _ := cur()
		out = jsonkit.SetMember(out, choice, "finish_reason", []byte(fr.Raw))
	}
	root, _, _ := cur()
	if u := rewrite.OpenAIMergeUsage(root.Get("usage"), nroot.Get("usage"), chatUsageKeys); u != nil {
		out = jsonkit.SetMember(out, root, "usage", u)
	}
	return out, nil
}

// chatContinueText returns the merged content value of a (acc's) continued
// by b (next's), or nil when b adds nothing.
func chatContinueText(a, b gjson.Result) ([]byte, error) {
	if jsonkit.IsNull(b) {
		return nil, nil
	}
	if jsonkit.IsNull(a) {
		return []byte(b.Raw), nil
	}
	// last is a's last text literal (a itself or its last element's text);
	// first is b's first text literal and rest b without it.
	var last gjson.Result
	switch {
	case a.Type == gjson.String:
		last = a
	case a.IsArray():
		if elems := rewrite.BlocksElems(a); len(elems) > 0 && chatIsTextPart(elems[len(elems)-1]) {
			last = elems[len(elems)-1].Get("text")
		}
	default:
		return nil, fmt.Errorf("%w: message content is neither a string nor an array", rewrite.ErrMalformedReply)
	}
	var first gjson.Result
	rest := b
	switch {
	case b.Type == gjson.String:
		first, rest = b, gjson.Result{}
	case b.IsArray():
		if elems := rewrite.BlocksElems(b); len(elems) > 0 && chatIsTextPart(elems[0]) {
			first = elems[0].Get("text")
			rb := []byte(b.Raw)
			if len(elems) == 1 {
				rest = gjson.Result{}
			} else {
				// b without its first element, parsed on its own.
				rb = rewrite.OpenAISpliceElems(rb, gjson.Result{Type: b.Type, Raw: b.Raw}, chatRebase(elems, b.Index), 0, 1, nil)
				rest = gjson.ParseBytes(rb)
			}
		}
	default:
		return nil, fmt.Errorf("%w: message content is neither a string nor an array", rewrite.ErrMalformedReply)
	}
	if !last.Exists() || !first.Exists() {
		return rewrite.OpenAIMergeText(a, b, "text")
	}
	// a with the trimmed text appended inside its last literal.
	ab := []byte(a.Raw)
	seam := rewrite.TrimSeam(last.Str, first.Str)
	pos := jsonkit.ValueEnd(last) - a.Index - 1 // last's closing quote, in ab
	var add []byte
	if seam == first.Str {
		add = []byte(first.Raw[1 : len(first.Raw)-1])
	} else {
		esc := jsonkit.Quote(seam)
		add = esc[1 : len(esc)-1]
	}
	ab = jsonkit.Splice(ab, pos, pos, add)
	if jsonkit.IsNull(rest) {
		return ab, nil
	}
	return rewrite.OpenAIMergeText(gjson.ParseBytes(ab), rest, "text")
}

// chatRebase returns elems with Index made relative to an array at base.
func chatRebase(elems []gjson.Result, base int) []gjson.Result {
	out := make([]gjson.Result, len(elems))
	for i, e := range elems {
		e.Index -= base
		out[i] = e
	}
	return out
}
