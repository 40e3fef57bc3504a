package rewrite

import (
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// ResultReplacer is the part of an API's TurnCodec that rewrites tool
// results the agent sent (conv.RequestEdits.ReplaceResults: evidence
// compaction). The turn engine applies it to the agent's body before the
// ledger replay; a codec without it leaves the request as it is (the
// edits are dropped and counted, fail-open).
type ResultReplacer interface {
	// ReplaceToolResults returns body with the content of each edit's
	// tool-result block replaced by the edit's Text, written as text
	// (conv.ResultEdit says the shape per API). Edits name distinct
	// (Msg, Block) positions of body's view, in any order. Everything
	// else, the call id and the error flag included, keeps its bytes. An
	// edit whose position is not a tool-result block is an error and body
	// is not changed.
	ReplaceToolResults(body []byte, edits []conv.ResultEdit) ([]byte, error)
}

// ResultSpan is one replacement a ReplaceToolResults makes: body[Start:End]
// becomes Repl.
type ResultSpan struct {
	Start, End int
	Repl       []byte
}

// ResultLocator is what ReplaceResultsWith needs from an API: the elements
// of a body's conversation (one walk over it), and for one edit the span
// that writes its text into the tool-result block it names, or an error
// when that position is not a tool-result block.
type ResultLocator struct {
	// Elems reads body and returns a function that resolves a view position
	// to its wire element (an error when there is none).
	Elems func(body []byte) (func(msg int) (gjson.Result, error), error)
	// Span returns the replacement of one block of the view message whose
	// wire element is elem.
	Span func(elem gjson.Result, block int, text string) (ResultSpan, error)
}

// ReplaceResultsWith is ReplaceToolResults on top of an API's locator: it
// checks the edits name distinct positions, finds every span in one walk
// over the conversation, and writes them all in one copy of body. On any
// error body is not changed.
func ReplaceResultsWith(body []byte, edits []conv.ResultEdit, loc ResultLocator) ([]byte, error) {
	if len(edits) == 0 {
		return body, nil
	}
	if err := distinctResultEdits(edits); err != nil {
		return nil, err
	}
	at, err := loc.Elems(body)
	if err != nil {
		return nil, err
	}
	spans := make([]ResultSpan, 0, len(edits))
	for _, e := range edits {
		elem, err := at(e.Msg)
		if err != nil {
			return nil, fmt.Errorf("rewrite: tool result at message %d: %w", e.Msg, err)
		}
		s, err := loc.Span(elem, e.Block, e.Text)
		if err != nil {
			return nil, fmt.Errorf("rewrite: tool result at message %d block %d: %w", e.Msg, e.Block, err)
		}
		spans = append(spans, s)
	}
	return SpliceSpans(body, spans)
}

// distinctResultEdits reports an error for a negative or repeated position.
func distinctResultEdits(edits []conv.ResultEdit) error {
	type pos struct{ msg, block int }
	seen := make(map[pos]struct{}, len(edits))
	for _, e := range edits {
		p := pos{e.Msg, e.Block}
		if e.Msg < 0 || e.Block < 0 {
			return fmt.Errorf("rewrite: tool result position (%d, %d) is negative", e.Msg, e.Block)
		}
		if _, dup := seen[p]; dup {
			return fmt.Errorf("rewrite: tool result at message %d block %d is replaced twice", e.Msg, e.Block)
		}
		seen[p] = struct{}{}
	}
	return nil
}

// SpliceSpans returns a new body with every span replaced, in one copy.
// The spans may come in any order but must not overlap.
func SpliceSpans(body []byte, spans []ResultSpan) ([]byte, error) {
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b ResultSpan) int { return a.Start - b.Start })
	n := len(body)
	for i, s := range sorted {
		if s.Start < 0 || s.End < s.Start || s.End > len(body) || (i > 0 && s.Start < sorted[i-1].End) {
			return nil, fmt.Errorf("rewrite: overlapping or out-of-range edits")
		}
		n += len(s.Repl) - (s.End - s.Start)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, s := range sorted {
		out = append(append(out, body[at:s.Start]...), s.Repl...)
		at = s.End
	}
	return append(out, body[at:]...), nil
}

// MemberSpan is the span that sets obj's member key to raw: the first
// member of that name has its value replaced; without one, the member is
// added after the last (as jsonkit.SetMember does).
func MemberSpan(obj gjson.Result, key string, raw []byte) ResultSpan {
	if v := jsonkit.Member(obj, key); v.Exists() {
		return ResultSpan{Start: v.Index, End: jsonkit.ValueEnd(v), Repl: raw}
	}
	member := jsonkit.AppendString(nil, key)
	member = append(member, ':')
	if pos := jsonkit.LastValueEnd(obj); pos >= 0 {
		return ResultSpan{Start: pos, End: pos, Repl: append(append([]byte{','}, member...), raw...)}
	}
	pos := obj.Index + 1
	return ResultSpan{Start: pos, End: pos, Repl: append(member, raw...)}
}

// ElementAt returns element i of arr, or an error when arr has fewer.
func ElementAt(arr gjson.Result, i int) (gjson.Result, error) {
	var out gjson.Result
	jsonkit.EachElement(arr, func(j int, v gjson.Result) bool {
		if j == i {
			out = v
			return false
		}
		return true
	})
	if !out.Exists() {
		return out, fmt.Errorf("no block %d", i)
	}
	return out, nil
}

// ElementsOf is a ResultLocator.Elems for APIs whose view messages are the
// elements of the top-level array key one for one (Anthropic messages,
// Chat messages, Gemini contents).
func ElementsOf(key string) func(body []byte) (func(int) (gjson.Result, error), error) {
	return func(body []byte) (func(int) (gjson.Result, error), error) {
		_, arr, err := BlocksConversation(body, key)
		if err != nil {
			return nil, err
		}
		elems := BlocksElems(arr)
		return func(i int) (gjson.Result, error) { return BlocksAt(elems, i, key) }, nil
	}
}

// ResultBlockOf parses one block (or single-block message) with an API's
// own view parser and reports an error unless the view reads it as a tool
// result: a replacement then lands exactly where the view shows one.
func ResultBlockOf(v gjson.Result, parse func(gjson.Result, *ToolNames) (conv.Block, error)) error {
	var names ToolNames
	b, err := parse(v, &names)
	if err != nil {
		return err
	}
	if b.Kind != conv.BlockToolResult {
		return fmt.Errorf("a %s block is not a tool result", b.Kind)
	}
	return nil
}
