package rewrite

import (
	"bytes"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

// UserTexts is one AppendUserTextAt of a batch: texts for the user turn at
// view position Pos.
type UserTexts struct {
	Pos   int
	Texts []string
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
	splices := make([]Splice, 0, len(ops))
	for _, op := range ops {
		// The span runs to the next element, separator included, and the
		// small body ends with a filler element after that separator: an
		// edit that inserts a message after the run then sees the same
		// neighbours, and lays out the same bytes, as in the whole body.
		s, e, more, ok := span(op.Pos)
		if !ok {
			return nil, false
		}
		if len(op.Texts) == 0 {
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
			return nil, false
		}
		splices = append(splices, Splice{s, e, out[len(prefix) : len(out)-len(suffix)]})
	}
	slices.SortFunc(splices, func(a, b Splice) int { return a.Start - b.Start })
	for i := 1; i < len(splices); i++ {
		if splices[i].Start < splices[i-1].End {
			return nil, false
		}
	}
	return splices, true
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
