package gemini

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Gemini ContinueCodec (truncation recovery).
//
// Gemini has no content blocks: a reply is a list of parts, and a text
// "block" is a run of consecutive text parts (a streamed reply has one part
// per delta). So:
//
//   - acc's open text is the run of text parts that ends its parts (the last
//     part is a text part without thought:true); it is continued by
//     appending to the text value of that last part;
//   - next's first text is its first run of text parts once its thought
//     parts (thought:true) are dropped: it starts at the first text part and
//     ends at the next part that is neither text nor thought (a
//     functionCall, inlineData, ...). The streaming splicer uses the same
//     definition, so both give the agent the same text.
//
// Parts are never rebuilt: kept parts are the reply's bytes, and an edited
// text part only has its "text" value changed (a thoughtSignature on it
// stays).

var _ rewrite.ContinueCodec = geminiCodec{}

// geminiPartKind classifies a part for truncation recovery.
type geminiPartKind uint8

const (
	gpOther geminiPartKind = iota
	gpText
	gpThought
	gpCall
)

func geminiKindOf(p *gjson.Result) geminiPartKind {
	// jsonkit's lookups, not gjson's Get: a streamed turn's splicer runs
	// this on every part (see), under the whole reading chain.
	fc := jsonkit.MemberRaw(p.Raw, "functionCall")
	if fc == "" {
		fc = jsonkit.MemberRaw(p.Raw, "function_call")
	}
	switch {
	case strings.HasPrefix(fc, "{"):
		return gpCall
	case jsonkit.Member(*p, "thought").Bool():
		return gpThought
	case strings.HasPrefix(jsonkit.MemberRaw(p.Raw, "text"), `"`):
		return gpText
	}
	return gpOther
}

// ContinuationMessages returns one model content with the reply's parts but
// its functionCall parts. With prefill the content ends with the last text
// part that has non-whitespace text, right-trimmed of whitespace (the parts
// after it, whitespace-only text or anything else, are dropped). hasText
// reports whether a non-thought text part with non-empty text remains;
// without one items is nil (also for a reply without parts, as Gemini sends
// SideIf thinking used up the output limit).
func (geminiCodec) ContinuationMessages(reply []byte, prefill bool) ([][]byte, bool, error) {
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, false, err
	}
	parts := geminiReplyParts(root)
	if jsonkit.IsNull(parts) {
		return nil, false, nil // e.g. the thinking budget took every token
	}
	if !parts.IsArray() {
		return nil, false, fmt.Errorf("%w: candidates[0].content.parts must be an array", rewrite.ErrMalformedReply)
	}
	elems := rewrite.BlocksElems(parts)
	keep := make([]int, 0, len(elems))
	hasText := false
	for i, p := range elems {
		switch geminiKindOf(&p) {
		case gpCall:
			continue
		case gpText:
			hasText = hasText || p.Get("text").Str != ""
		}
		keep = append(keep, i)
	}
	var trimmed []byte // new raw text of the last kept part (prefill)
	if prefill {
		hasText = false
		for n := len(keep); n > 0; n-- {
			p := elems[keep[n-1]]
			if geminiKindOf(&p) != gpText {
				continue
			}
			t := p.Get("text")
			raw := geminiTrimRightRaw(t.Raw)
			if raw == `""` {
				continue
			}
			keep, hasText = keep[:n], true
			if len(raw) != len(t.Raw) {
				trimmed = []byte(raw)
			}
			break
		}
	}
	if !hasText {
		return nil, false, nil
	}
	out := reply
	if len(keep) != len(elems) {
		out = rewrite.BlocksReorder(reply, elems, keep)
	}
	if root, err = rewrite.ParseReplyRoot(out); err != nil {
		return nil, false, err
	}
	parts = geminiReplyParts(root)
	if trimmed != nil {
		kept := rewrite.BlocksElems(parts)
		t := kept[len(kept)-1].Get("text")
		out = jsonkit.Splice(out, t.Index, jsonkit.ValueEnd(t), trimmed)
		if root, err = rewrite.ParseReplyRoot(out); err != nil {
			return nil, false, err
		}
		parts = geminiReplyParts(root)
	}
	msg := make([]byte, 0, len(parts.Raw)+28)
	msg = append(msg, `{"role":"model","parts":`...)
	msg = append(msg, parts.Raw...)
	return [][]byte{append(msg, '}')}, true, nil
}

// UserTextMessage returns {"role":"user","parts":[{"text":text}]}.
func (geminiCodec) UserTextMessage(text string) ([]byte, error) {
	return geminiUserContent(geminiTextParts([]string{text})), nil
}

// ContinueReply appends next's first text (see the file comment) to the
// text value of acc's last part when that is a text part, with the seam
// de-duplicated against acc's trailing text run; otherwise that text stays
// as next's parts. next's thought parts are dropped and its other parts
// follow acc's, in order. finishReason and usageMetadata are merged as
// MergeReplies merges them; everything else is acc's.
func (geminiCodec) ContinueReply(acc, next []byte) ([]byte, error) {
	_, _, p1, p2, err := geminiReplyPair(acc, next)
	if err != nil {
		return nil, err
	}

	// acc's trailing text run.
	e1 := rewrite.BlocksElems(p1)
	open := len(e1) > 0 && geminiKindOf(&e1[len(e1)-1]) == gpText
	var prev []byte
	if open {
		j, n := len(e1), 0
		for j > 0 && geminiKindOf(&e1[j-1]) == gpText && n < rewrite.SeamWindow {
			j--
			n += len(e1[j].Get("text").Str)
		}
		for _, p := range e1[j:] {
			prev = append(prev, p.Get("text").Str...)
		}
	}

	// next's parts without thoughts, its first text run merged when open.
	var rest [][]byte
	var text []byte
	const before, in, after = 0, 1, 2
	run := before
	for _, p := range rewrite.BlocksElems(p2) {
		k := geminiKindOf(&p)
		switch {
		case k == gpThought:
			continue
		case k == gpText && run != after:
			run = in
			if open {
				text = append(text, p.Get("text").Str...)
				continue
			}
		case run == in:
			run = after
		}
		rest = append(rest, []byte(p.Raw))
	}

	out := acc
	if open {
		if add := rewrite.TrimSeam(string(prev), string(text)); add != "" {
			out = jsonkit.AppendToString(acc, e1[len(e1)-1].Get("text"), add)
		}
	}
	nx := next
	if p2.IsArray() {
		nx = jsonkit.Splice(next, p2.Index, jsonkit.ValueEnd(p2), geminiPartsArray(rest))
	}
	return geminiCodec{}.MergeReplies(out, nx)
}

// geminiPartsArray renders raw parts as a JSON array.
func geminiPartsArray(parts [][]byte) []byte {
	n := 2
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, ']')
}

// geminiTextPart renders {"text":t}.
func geminiTextPart(t string) []byte {
	b := make([]byte, 0, len(t)+12)
	b = append(b, `{"text":`...)
	b = jsonkit.AppendString(b, t)
	return append(b, '}')
}

// geminiTrimRightRaw returns the raw JSON string literal raw without the
// escape sequences and characters at its end that decode to whitespace
// (unicode.IsSpace), keeping the rest byte for byte.
func geminiTrimRightRaw(raw string) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return raw
	}
	s := raw[1 : len(raw)-1]
	cut := 0 // end of the last non-whitespace unit
	for i := 0; i < len(s); {
		r, n := geminiStringUnit(s[i:])
		i += n
		if !unicode.IsSpace(r) {
			cut = i
		}
	}
	return raw[:1+cut] + `"`
}

// geminiStringUnit decodes the first character of the inside of a JSON string
// literal: a UTF-8 rune or an escape sequence (a surrogate pair counting as
// one). It returns the rune and the bytes it takes.
func geminiStringUnit(s string) (rune, int) {
	if s[0] != '\\' {
		return utf8.DecodeRuneInString(s)
	}
	if len(s) < 2 {
		return utf8.RuneError, 1
	}
	switch s[1] {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'f':
		return '\f', 2
	case 'b':
		return '\b', 2
	case 'u':
		r, ok := geminiHex4(s[2:])
		if !ok {
			return utf8.RuneError, 2
		}
		if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if r2, ok := geminiHex4(s[8:]); ok {
				if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
					return c, 12
				}
			}
		}
		return r, 6
	}
	return rune(s[1]), 2
}

// geminiHex4 parses the 4 hex digits at the start of s.
func geminiHex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
