package responses

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Responses side of ContinueCodec. A response cut by the
// output limit has status "incomplete" with incomplete_details.reason
// "max_output_tokens"; its text is the output_text part ending the last
// message item. Every edit keeps the bytes around it: a text value that
// grows keeps its literal and gets the new text appended inside it.

var _ rewrite.ContinueCodec = responsesCodec{}

// ContinuationMessages returns the reply's output items as input items, byte
// for byte, without its function_call and custom_tool_call items (reasoning
// items keep their encrypted_content). With prefill the items end with the
// last message's last output_text part, its text right-trimmed of
// whitespace: items after that message and parts after that part are
// dropped, and a part the trim empties is dropped (then the part or message
// before it ends the items, trimmed the same way), so a message left
// without parts goes too. hasText reports whether a message item keeps an
// output_text part with non-empty text.
func (responsesCodec) ContinuationMessages(reply []byte, prefill bool) ([][]byte, bool, error) {
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, false, err
	}
	output := root.Get("output")
	if !output.IsArray() {
		return nil, false, fmt.Errorf("%w: no output array", rewrite.ErrMalformedReply)
	}
	var items [][]byte
	elems := rewrite.BlocksElems(output)
	for i, it := range elems {
		if !it.IsObject() {
			return nil, false, fmt.Errorf("%w: output[%d] is not an object", rewrite.ErrMalformedReply, i)
		}
		typ := it.Get("type").Str
		if responsesCallType(typ) {
			continue
		}
		if typ == "reasoning" && !respReasoningKept(elems[i+1:]) {
			// A reasoning item must come with the item it produced; the
			// API rejects one whose following call was dropped.
			continue
		}
		items = append(items, []byte(it.Raw))
	}
	if prefill {
		items = respPrefillItems(items)
	}
	hasText := false
	for _, it := range items {
		if respMessageText(it) {
			hasText = true
			break
		}
	}
	return items, hasText, nil
}

// respReasoningKept reports whether a reasoning item followed by rest
// keeps the item it produced: the next item that is not reasoning is kept
// (not a tool call) in the continuation history.
func respReasoningKept(rest []gjson.Result) bool {
	for _, it := range rest {
		switch typ := it.Get("type").Str; {
		case typ == "reasoning":
			continue
		case responsesCallType(typ):
			return false
		default:
			return true
		}
	}
	return false
}

// respMessageText reports whether item is a message with an output_text
// part whose text is not empty.
func respMessageText(item []byte) bool {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(item))
	if !ok || root.Get("type").Str != "message" {
		return false
	}
	found := false
	jsonkit.EachElement(root.Get("content"), func(_ int, p gjson.Result) bool {
		t := p.Get("text")
		found = p.Get("type").Str == "output_text" && t.Type == gjson.String && t.Str != ""
		return !found
	})
	return found
}

// respPrefillItems shapes items (valid JSON objects) so they end with the
// last message's last output_text part, right-trimmed.
func respPrefillItems(items [][]byte) [][]byte {
	for len(items) > 0 {
		n := len(items) - 1
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(items[n]))
		if root.Get("type").Str != "message" {
			items = items[:n]
			continue
		}
		content := root.Get("content")
		parts := rewrite.BlocksElems(content)
		last := -1
		for j, p := range parts {
			if p.Get("type").Str == "output_text" && p.Get("text").Type == gjson.String {
				last = j
			}
		}
		if last < 0 {
			items = items[:n]
			continue
		}
		text := parts[last].Get("text")
		trimmed := strings.TrimRightFunc(text.Str, unicode.IsSpace)
		msg := items[n]
		if trimmed == "" {
			if last == 0 {
				items = items[:n]
				continue
			}
			// Drop the emptied part and what follows; the part before it
			// now ends the message and is trimmed in the next round.
			items = append(items[:n:n], rewrite.OpenAISpliceElems(msg, content, parts, last, len(parts), nil))
			continue
		}
		if last+1 < len(parts) {
			msg = rewrite.OpenAISpliceElems(msg, content, parts, last+1, len(parts), nil)
		}
		if trimmed != text.Str {
			root, _ = jsonkit.RootObject(jsonkit.UnsafeString(msg))
			text = rewrite.BlocksElems(root.Get("content"))[last].Get("text")
			msg = jsonkit.Splice(msg, text.Index, jsonkit.ValueEnd(text), respTrimmedLiteral(text, trimmed))
		}
		return append(items[:n:n], msg)
	}
	return nil
}

// respTrimmedLiteral returns the JSON literal of trimmed, a prefix of the
// string s decodes to: s's own bytes up to that point when they decode to
// exactly trimmed (escapes kept as written), else trimmed re-encoded.
func respTrimmedLiteral(s gjson.Result, trimmed string) []byte {
	content := s.Raw[1 : len(s.Raw)-1]
	if cut := respLiteralPrefix(content, len(trimmed)); cut >= 0 {
		lit := []byte(`"` + content[:cut] + `"`)
		if gjson.ParseBytes(lit).Str == trimmed {
			return lit
		}
	}
	return jsonkit.Quote(trimmed)
}

// respLiteralPrefix returns the offset in content, the inside of a JSON
// string literal, at which the decoded text reaches n bytes, or -1 when no
// escape or character boundary falls there.
func respLiteralPrefix(content string, n int) int {
	dec := 0
	for i := 0; i < len(content); {
		switch {
		case dec == n:
			return i
		case dec > n:
			return -1
		}
		if content[i] != '\\' {
			_, size := utf8.DecodeRuneInString(content[i:])
			dec += size
			i += size
			continue
		}
		if i+1 >= len(content) {
			return -1
		}
		if content[i+1] != 'u' {
			dec++
			i += 2
			continue
		}
		r, ok := respHex4(content, i+2)
		if !ok {
			return -1
		}
		i += 6
		if utf16.IsSurrogate(r) {
			if r2, ok := respHex4(content, i+2); ok && i+1 < len(content) && content[i] == '\\' && content[i+1] == 'u' {
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				}
			}
		}
		if l := utf8.RuneLen(r); l > 0 {
			dec += l
		} else {
			dec += utf8.RuneLen(utf8.RuneError)
		}
	}
	if dec == n {
		return len(content)
	}
	return -1
}

// respHex4 reads the four hex digits at s[i:i+4].
func respHex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 16)
	return rune(v), err == nil
}

// UserTextMessage returns {"role":"user","content":[{"type":"input_text",
// "text":…}]}.
func (responsesCodec) UserTextMessage(text string) ([]byte, error) {
	return responsesUserItem(rewrite.TextItems("input_text", []string{text})), nil
}

// respOpenText finds the text a continuation extends: the last output item
// SideIf it is a message whose last content part is output_text with a string
// text. It returns that item and the part's text value.
func respOpenText(elems []gjson.Result) (msg, text gjson.Result, ok bool) {
	if len(elems) == 0 {
		return msg, text, false
	}
	msg = elems[len(elems)-1]
	if !msg.IsObject() || msg.Get("type").Str != "message" {
		return msg, text, false
	}
	parts := rewrite.BlocksElems(msg.Get("content"))
	if len(parts) == 0 {
		return msg, text, false
	}
	p := parts[len(parts)-1]
	text = p.Get("text")
	return msg, text, p.IsObject() && p.Get("type").Str == "output_text" && text.Type == gjson.String
}

// respTextEdit is what continuations added to a message item the agent
// was shown: text appended to its output_text part at index content, extra
// content parts after its parts, and the status of the last continuation's
// message.
type respTextEdit struct {
	content int
	added   strings.Builder
	extra   [][]byte
	status  []byte
}

func (e *respTextEdit) empty() bool {
	return e == nil || e.added.Len() == 0 && len(e.extra) == 0 && e.status == nil
}

// apply returns the message item with the edit applied (item itself when
// it has nothing to change).
func (e *respTextEdit) apply(item []byte) []byte {
	if e.empty() {
		return item
	}
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(item))
	if !ok || !gjson.ValidBytes(item) {
		return item
	}
	out := item
	if e.added.Len() > 0 {
		parts := rewrite.BlocksElems(root.Get("content"))
		if e.content >= 0 && e.content < len(parts) {
			if t := parts[e.content].Get("text"); t.Type == gjson.String {
				out = jsonkit.AppendToString(out, t, e.added.String())
			}
		}
	}
	if len(e.extra) > 0 {
		root, _ = jsonkit.RootObject(jsonkit.UnsafeString(out))
		if c := root.Get("content"); c.IsArray() {
			out = jsonkit.AppendElements(out, c, rewrite.OpenAIJoin(e.extra))
		}
	}
	if e.status != nil {
		root, _ = jsonkit.RootObject(jsonkit.UnsafeString(out))
		out = jsonkit.SetMember(out, root, "status", e.status)
	}
	return out
}

// ContinueReply returns acc continued by next. When acc's last output item
// is a message ending with an output_text part, next's first message item
// (when no item other than a reasoning item or tool call comes before it)
// is merged into it: its first part, when output_text, is appended to that
// part's text with the seam de-duplicated (TrimSeam), its other parts
// follow acc's parts, and its status becomes the message's. next's
// reasoning items are dropped; its other items, calls included, follow
// acc's output in order. id, status, error and completed_at are next's as in
// MergeReplies, incomplete_details too (removed when next has none, null
// SideIf next completed), and usage is summed as MergeReplies sums it.
func (responsesCodec) ContinueReply(acc, next []byte) ([]byte, error) {
	aroot, err := rewrite.ParseReplyRoot(acc)
	if err != nil {
		return nil, err
	}
	nroot, err := rewrite.ParseReplyRoot(next)
	if err != nil {
		return nil, err
	}
	aout, nout := aroot.Get("output"), nroot.Get("output")
	if rewrite.WantArray(aout, "") != nil || rewrite.WantArray(nout, "") != nil {
		return nil, fmt.Errorf("%w: output is not an array", rewrite.ErrMalformedReply)
	}
	msg, text, open := respOpenText(rewrite.BlocksElems(aout))
	var tail [][]byte // next's items that follow acc's output
	var edit *respTextEdit
	for i, it := range rewrite.BlocksElems(nout) {
		if !it.IsObject() {
			return nil, fmt.Errorf("%w: output[%d] is not an object", rewrite.ErrMalformedReply, i)
		}
		switch t := it.Get("type").Str; {
		case t == "reasoning":
			continue
		case open && edit == nil && t == "message":
			edit = respMergeMessage(text.Str, it)
			continue
		case !responsesCallType(t):
			open = false // the message no longer ends acc's content
		}
		tail = append(tail, []byte(it.Raw))
	}
	out := append([]byte(nil), acc...)
	if edit != nil {
		msgParts := rewrite.BlocksElems(msg.Get("content"))
		edit.content = len(msgParts) - 1
		out = jsonkit.Splice(out, msg.Index, jsonkit.ValueEnd(msg), edit.apply([]byte(msg.Raw)))
	}
	if len(tail) > 0 {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(out))
		if o := root.Get("output"); o.IsArray() {
			out = jsonkit.AppendElements(out, o, rewrite.OpenAIJoin(tail))
		} else {
			out = jsonkit.SetMember(out, root, "output", rewrite.Enclose('[', rewrite.OpenAIJoin(tail), ']'))
		}
	}
	completed := nroot.Get("status").Str == "completed"
	for _, key := range responsesOutcome {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(out))
		v := nroot.Get(key)
		switch {
		case key == "incomplete_details" && v.Exists() && completed:
			out = jsonkit.SetMember(out, root, key, []byte("null"))
		case v.Exists():
			out = jsonkit.SetMember(out, root, key, []byte(v.Raw))
		case key == "incomplete_details":
			out = rewrite.OpenAIDeleteMember(out, root, key)
		case root.Get(key).Exists():
			out = jsonkit.SetMember(out, root, key, []byte("null"))
		}
	}
	root, _ := jsonkit.RootObject(jsonkit.UnsafeString(out))
	if u := rewrite.OpenAIMergeUsage(root.Get("usage"), nroot.Get("usage"), responsesUsageKeys); u != nil {
		out = jsonkit.SetMember(out, root, "usage", u)
	}
	return out, nil
}

// respMergeMessage returns the edit that merges the continuation message m
// into a message whose text so far is prev.
func respMergeMessage(prev string, m gjson.Result) *respTextEdit {
	e := &respTextEdit{}
	for j, p := range rewrite.BlocksElems(m.Get("content")) {
		if t := p.Get("text"); j == 0 && p.Get("type").Str == "output_text" && t.Type == gjson.String {
			e.added.WriteString(rewrite.TrimSeam(prev, t.Str))
			continue
		}
		e.extra = append(e.extra, []byte(p.Raw))
	}
	if s := m.Get("status"); s.Type == gjson.String {
		e.status = []byte(s.Raw)
	}
	return e
}
