package rewrite

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Anthropic ContinueCodec (truncation recovery); the
// streaming side is in anthropic_splice.go.
//
// Anthropic rejects text blocks that are empty or whitespace only in a
// request, so ContinuationMessages leaves those out; and it rejects a final
// assistant message (a prefill) that ends with whitespace.

var _ ContinueCodec = anthropicCodec{}

// ContinuationMessages returns the reply as one assistant message without
// its tool_use blocks and blank text blocks; every other block keeps its
// bytes. With prefill the message ends with the last non-blank text block,
// right-trimmed of whitespace: the blocks after it (thinking, server tool
// blocks, blank text) are left out, since the model continues the last
// block of a prefill. Without any non-blank text, hasText is false and
// items is nil.
func (anthropicCodec) ContinuationMessages(reply []byte, prefill bool) ([][]byte, bool, error) {
	root, err := parseReplyRoot(reply)
	if err != nil {
		return nil, false, err
	}
	content := root.Get("content")
	if !content.IsArray() {
		return nil, false, fmt.Errorf("%w: content must be an array", ErrMalformedReply)
	}
	elems := agElems(content)
	keep := make([]int, 0, len(elems))
	last := -1 // position in keep of the last non-blank text block
	for i, b := range elems {
		switch b.Get("type").Str {
		case "tool_use":
			continue
		case "text":
			t := b.Get("text")
			if t.Type != gjson.String {
				return nil, false, fmt.Errorf("%w: content[%d].text must be a string", ErrMalformedReply, i)
			}
			if strings.TrimSpace(t.Str) == "" {
				continue
			}
			last = len(keep)
		}
		keep = append(keep, i)
	}
	if last < 0 {
		return nil, false, nil
	}
	if prefill {
		keep = keep[:last+1]
	}
	out := agReorder(reply, elems, keep)
	if prefill {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(out))
		kept := agElems(root.Get("content"))
		t := kept[last].Get("text")
		if trimmed := strings.TrimRightFunc(t.Str, unicode.IsSpace); len(trimmed) < len(t.Str) {
			out = jsonkit.Splice(out, t.Index, jsonkit.ValueEnd(t), jsonkit.Quote(trimmed))
		}
	}
	items, err := anthropicCodec{}.ReplyAsMessages(out)
	if err != nil {
		return nil, false, err
	}
	return items, true, nil
}

// UserTextMessage returns {"role":"user","content":[{"type":"text","text":…}]}.
func (anthropicCodec) UserTextMessage(text string) ([]byte, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("rewrite: the continue instruction is blank")
	}
	return anthropicUserMessage(textItems("text", []string{text})), nil
}

// ContinueReply runs next on in acc. When next's first block (after the
// thinking and redacted_thinking blocks, which are dropped) is text and
// acc's last block is text, next's text is appended to acc's with the seam
// de-duplicated (TrimSeam), acc's escaped bytes kept; otherwise that text
// block follows acc's content as it is. next's other blocks follow in
// order. id and everything else come from acc; stop_reason and
// stop_sequence from next; usage as MergeReplies sums it.
func (anthropicCodec) ContinueReply(acc, next []byte) ([]byte, error) {
	r1, err := parseReplyRoot(acc)
	if err != nil {
		return nil, fmt.Errorf("accumulated reply: %w", err)
	}
	r2, err := parseReplyRoot(next)
	if err != nil {
		return nil, fmt.Errorf("next reply: %w", err)
	}
	c1, c2 := r1.Get("content"), r2.Get("content")
	if !c1.IsArray() {
		return nil, fmt.Errorf("%w: accumulated reply: content must be an array", ErrMalformedReply)
	}
	if !c2.IsArray() && !jsonkit.IsNull(c2) {
		return nil, fmt.Errorf("%w: next reply: content must be an array", ErrMalformedReply)
	}

	// The text acc ends with, if its last block is text.
	var accText gjson.Result
	if e1 := agElems(c1); len(e1) > 0 && e1[len(e1)-1].Get("type").Str == "text" {
		if t := e1[len(e1)-1].Get("text"); t.Type == gjson.String {
			accText = t
		}
	}
	var add []string // raw blocks appended after acc's content
	var seam string  // text appended to accText
	first := true    // no block of next kept yet
	for i, b := range agElems(c2) {
		typ := b.Get("type").Str
		if typ == "thinking" || typ == "redacted_thinking" {
			continue
		}
		if first && typ == "text" && accText.Exists() {
			t := b.Get("text")
			if t.Type != gjson.String {
				return nil, fmt.Errorf("%w: next reply: content[%d].text must be a string", ErrMalformedReply, i)
			}
			seam = TrimSeam(accText.Str, t.Str)
			first = false
			continue
		}
		first = false
		add = append(add, b.Raw)
	}

	out := acc
	if len(add) > 0 {
		out = jsonkit.AppendElements(out, c1, []byte(strings.Join(add, ",")))
	}
	if seam != "" {
		out = jsonkit.AppendToString(out, accText, seam) // accText lies before the appended blocks
	}
	if len(add) == 0 && seam == "" {
		out = append([]byte(nil), acc...)
	}
	return anthropicTakeStopAndUsage(out, r1, r2)
}
