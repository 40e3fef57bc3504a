package rewrite

import (
	"bytes"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

// UserTexts is one AppendUserTextAt of a batch: texts for the user turn at
// view position Pos. Reuse, when set, carries the turn's edit from one
// batch to the next (SpliceReuse): a batch reads Reuse.Known and sets
// Reuse.Made.
type UserTexts struct {
	Pos   int
	Texts []string
	Reuse *SpliceReuse
}

// SpliceReuse lets a batch of user texts take a turn's edit from an
// earlier batch instead of making it again. A turn's edit reads only the
// turn's span (the elements it edits, and the separator after them), so
// the same texts on the same bytes at the same offsets make the same
// splice; a session replays the same texts into the same earlier turns on
// every request.
//
// Known is an earlier batch's Made (zero: none). The batch uses it when the
// turn's span in this body is Known's span: the caller vouches that the
// texts are the ones Known was made with and that body's bytes in that span
// are the bytes Known was made from, compared byte for byte (for example,
// both lie in the prefix two bodies share, conv.BodyLineage). Made is what
// the batch made, or took from Known, for the turn; zero when the batch
// went one by one.
type SpliceReuse struct {
	Known, Made TurnSplice
}

// TurnSplice is a batch's edit of one turn: the turn's span
// [SpanStart, SpanEnd) of the body, and the splice the edit made of it,
// the bytes it kept at either end left out (Splice lies inside the span).
// SpanEnd 0 is none.
type TurnSplice struct {
	SpanStart, SpanEnd int
	Splice             Splice
}

// usable reports whether ts is a splice of the span [s, e).
func (ts *TurnSplice) usable(s, e int) bool {
	return ts.SpanEnd > 0 && ts.SpanStart == s && ts.SpanEnd == e &&
		s <= ts.Splice.Start && ts.Splice.Start <= ts.Splice.End && ts.Splice.End <= e
}

// UserTurnLocator is the part of a codec the batched append needs: the
// elements of body's conversation array and, for a view position, the
// elements [first, end) that AppendUserTextAt at that position reads and
// edits, the first of which is the turn itself.
type UserTurnLocator interface {
	ConversationKey() string
	// FillerElem is a valid conversation element that no edit touches.
	FillerElem() string
	UserTurnElems(body []byte) (elems []gjson.Result, run func(pos int) (first, end int, err error), err error)
}

// ErrNoBatch tells AppendUserTextsBatched to apply the batch one by one (a body
// whose conversation has no separate elements, e.g. a Responses string
// input).
var ErrNoBatch = errors.New("rewrite: no batched edit for this body")

// AppendUserTextsBatched applies ops as AppendUserTextAt would one after the other
// in descending position order, with one walk over the conversation (none
// when p indexes body: Parsed) and one copy of the body instead of one of
// each per op: the session ledger
// replays a reminder into every earlier user turn of a conversation, and
// done one by one that work grows with the square of its length.
//
// Each turn is edited by the codec's own AppendUserTextAt on a body holding
// only the elements that edit touches ({"<key>":[elements]}), so the bytes
// are exactly those of the one-by-one path; the edited elements are then
// put in place in a single pass. When the ops' elements overlap, or
// anything else is out of the ordinary (an error, which then names the
// right position), the batch falls back to one by one.
func AppendUserTextsBatched(tc TurnCodec, loc UserTurnLocator, p *Parsed, body []byte, ops []UserTexts) ([]byte, error) {
	if len(ops) == 0 || len(ops) == 1 && p.IndexOf(body) == nil {
		return appendUserTextsOneByOne(tc, body, ops)
	}
	splices, ok := UserTextSplices(tc, loc, p, body, ops)
	if !ok {
		return appendUserTextsFallback(tc, body, ops)
	}
	out, pooled := p.scratchFor(body, splicedLen(0, len(body), splices))
	out = appendSpliced(out, body, 0, len(body), splices)
	p.memberEdited(body, out, loc.ConversationKey(), len(out)-len(body), pooled)
	p.recordCopy(body, out, splicedRuns(nil, 0, 0, len(body), splices))
	return out, nil
}

// UserTextSplices works out AppendUserTextsBatched's edit of body as
// splices of its conversation member (in order, not overlapping), without
// copying the body; false when the batch must go one by one (the caller
// then uses AppendUserTextsBatched, which does).
func UserTextSplices(tc TurnCodec, loc UserTurnLocator, p *Parsed, body []byte, ops []UserTexts) ([]Splice, bool) {
	span, done, ok := userTurnSpans(loc, p, body)
	if !ok {
		return nil, false
	}
	defer done()
	prefix := `{"` + loc.ConversationKey() + `":[`
	made := make([]TurnSplice, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		// The span runs to the next element, separator included, and the
		// small body ends with a filler element after that separator: an
		// edit that inserts a message after the run then sees the same
		// neighbours, and lays out the same bytes, as in the whole body.
		s, e, more, ok := span(op.Pos)
		if !ok {
			return nil, clearMade(ops)
		}
		if len(op.Texts) == 0 {
			continue
		}
		if op.Reuse != nil && op.Reuse.Known.usable(s, e) {
			made = append(made, op.Reuse.Known)
			op.Reuse.Made = op.Reuse.Known
			continue
		}
		suffix := "]}"
		if more {
			suffix = loc.FillerElem() + "]}"
		}
		mini := make([]byte, 0, len(prefix)+e-s+len(suffix))
		mini = append(append(append(mini, prefix...), body[s:e]...), suffix...)
		out, err := tc.AppendUserTextAt(mini, 0, op.Texts)
		if err != nil || !bytes.HasPrefix(out, []byte(prefix)) || !bytes.HasSuffix(out, []byte(suffix)) {
			return nil, clearMade(ops)
		}
		ts := TurnSplice{SpanStart: s, SpanEnd: e, Splice: trimSplice(body, s, e, out[len(prefix):len(out)-len(suffix)])}
		made = append(made, ts)
		if op.Reuse != nil {
			op.Reuse.Made = ts
		}
	}
	// Spans that overlap (two ops on one turn, or turns whose edits read
	// the same elements) go one by one. The ledger replay hands its ops
	// newest turn first, so reversing them is the sort (sorting a long
	// session's splices was 4 % of its begin: BenchmarkBeginLongSession).
	byStart := func(a, b TurnSplice) int { return a.SpanStart - b.SpanStart }
	if slices.IsSortedFunc(made, func(a, b TurnSplice) int { return byStart(b, a) }) {
		slices.Reverse(made)
	} else {
		slices.SortFunc(made, byStart)
	}
	splices := make([]Splice, len(made))
	for i := range made {
		if i > 0 && made[i].SpanStart < made[i-1].SpanEnd {
			return nil, clearMade(ops)
		}
		splices[i] = made[i].Splice
	}
	return splices, true
}

// clearMade forgets the splices a batch that goes one by one after all
// had noted as made; it returns false, the batch's answer.
func clearMade(ops []UserTexts) bool {
	for i := range ops {
		if ops[i].Reuse != nil {
			ops[i].Reuse.Made = TurnSplice{}
		}
	}
	return false
}

// trimSplice is the splice that replaces body[s:e] by b, less the bytes
// the two share at their start and at their end: a text appended to a turn
// replaces only the few bytes around the insertion, so the turn's own bytes
// count as copied (CopyRun), and a remembered splice holds only the text.
func trimSplice(body []byte, s, e int, b []byte) Splice {
	old := body[s:e]
	p := CommonPrefix(old, b)
	q := 0
	for q < len(old)-p && q < len(b)-p && old[len(old)-1-q] == b[len(b)-1-q] {
		q++
	}
	return Splice{Start: s + p, End: e - q, Bytes: b[p : len(b)-q]}
}

// SingleElemTurnLocator is a UserTurnLocator whose user turn at a view
// position is the one conversation element at that position
// (SingleElemTurns: Anthropic messages, Gemini contents).
type SingleElemTurnLocator interface {
	UserTurnLocator
	SingleElemTurns()
}

// userTurnSpans returns, for a view position, the bytes [s, e) the batch
// edits for that turn (its elements, and the separator after them when
// more elements follow: more), ok false when the position has no turn;
// done gives back what it used. For single-element turns of an indexed
// body the spans come from the index: listing a long conversation's
// elements cost more than the edits (pprof: a tenth of a 1 MB history
// request's build).
func userTurnSpans(loc UserTurnLocator, p *Parsed, body []byte) (span func(pos int) (s, e int, more, ok bool), done func(), ok bool) {
	key := loc.ConversationKey()
	if _, single := loc.(SingleElemTurnLocator); single {
		if es, ok := p.IndexOf(body).MemberElems(key); ok {
			return func(pos int) (int, int, bool, bool) {
				if pos < 0 || pos >= es.Len() {
					return 0, 0, false, false
				}
				s, e := es.At(pos)
				if pos+1 < es.Len() {
					e, _ = es.At(pos + 1)
					return s, e, true, true
				}
				return s, e, false, true
			}, func() {}, true
		}
	}
	elems, run, err := loc.UserTurnElems(body)
	if err != nil {
		return nil, nil, false
	}
	return func(pos int) (int, int, bool, bool) {
		first, end, err := run(pos)
		if err != nil {
			return 0, 0, false, false
		}
		s, e := elems[first].Index, elems[end-1].Index+len(elems[end-1].Raw)
		if end < len(elems) {
			return s, elems[end].Index, true, true
		}
		return s, e, false, true
	}, func() { ReleaseElems(elems) }, true // the locator's slice is the batch's alone
}

// userTextFallbacks counts batches applied one by one (tests check that
// ordinary batches are not).
var userTextFallbacks atomic.Int64

func appendUserTextsFallback(tc TurnCodec, body []byte, ops []UserTexts) ([]byte, error) {
	userTextFallbacks.Add(1)
	return appendUserTextsOneByOne(tc, body, ops)
}

// appendUserTextsOneByOne is the reference: each op in descending position
// order, so earlier positions stay valid.
func appendUserTextsOneByOne(tc TurnCodec, body []byte, ops []UserTexts) ([]byte, error) {
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b UserTexts) int { return b.Pos - a.Pos })
	out := body
	for _, op := range sorted {
		var err error
		if out, err = tc.AppendUserTextAt(out, op.Pos, op.Texts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ConversationElems returns the elements of body's root array member key:
// from p's index when body is the body p remembers, else by walking body.
// The error wraps ErrMalformed when the member is not an array.
func ConversationElems(p *Parsed, body []byte, key string) ([]gjson.Result, error) {
	if elems, ok := p.Elements(body, key); ok {
		return elems, nil
	}
	_, arr, err := BlocksConversation(body, key)
	if err != nil {
		return nil, err
	}
	return BlocksElems(arr), nil
}

// SingleElemTurns locates the user turns of APIs whose turns are one
// element each at their view position (Anthropic messages, Gemini contents).
func SingleElemTurns(p *Parsed, body []byte, key string) ([]gjson.Result, func(int) (int, int, error), error) {
	elems, err := ConversationElems(p, body, key)
	if err != nil {
		return nil, nil, err
	}
	return elems, func(pos int) (int, int, error) {
		if pos < 0 || pos >= len(elems) {
			return 0, 0, ErrNoBatch // out of range: the one-by-one path names it
		}
		return pos, pos + 1, nil
	}, nil
}
