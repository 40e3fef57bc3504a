package turn

import (
	"slices"
	"unsafe"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// The splice memo keeps, per session, the edits the previous request's
// build made to put the ledger's user texts into earlier turns
// (rewrite.TurnSplice), so the next request takes them instead of editing
// every turn again. A session replays one text per earlier turn on every
// request, so without it that work grows with the session's length (pprof,
// BenchmarkReplayUserTexts: 5–8 µs per turn, half a millisecond per request
// for a session of a hundred turns).
//
// An edit is taken only where the codec would make the same bytes: the same
// texts, at the same anchor, on a turn whose span lies in the bytes this
// body shares with the body the edit was made on. Sharing is what the index
// memo compared byte for byte (conv.BodyLineage: this body's Prev is the
// kept body's Gen, and the span ends within Shared); the batch then checks
// that the turn's span is the one the edit was made of. The anchor alone
// would not do: a turn can read the same, and keep its anchor, while its
// bytes differ (members in another order, an escape's hex digits in
// another case), and an edit that copies the turn's text would then put
// the old bytes back. A hash alone is never trusted.
//
// Memory is bounded in bytes (the texts and the splices, which hold only
// what an edit inserted), least recently used session first out.

// spliceSet is one request's edits, by the anchor of the turn they edit.
type spliceSet struct {
	gen   uint64 // the Gen of the body they were made on
	turns map[string]*keptSplice
	bytes int64
	// reuse is the last build's SpliceReuse slice, for the next build of
	// the session (one per earlier turn: a long session's build allocated
	// tens of KB for it on every request). It is kept all zero: its
	// splices' bytes are slices of the build's scratch body and of dropped
	// edits, which it must not keep alive. found is the last build's
	// splicesReused.found, kept all nil for the same reasons.
	reuse []rewrite.SpliceReuse
	found []*keptSplice
}

// keptSplice is one turn's edit. gen is the Gen of the latest body it was
// made on or taken for (the bytes of its span in that body are the ones it
// was made of): a set keeps only the edits of its own gen, so that an edit
// no request took since an older body is never vouched for by a newer one.
type keptSplice struct {
	texts []string
	at    rewrite.TurnSplice
	gen   uint64
	// replaced: keep put another edit in this one's place (it is no
	// longer in the set). A batch's ops edit distinct turns (overlapping
	// spans go one by one, and keep then gets no edit), so no later op of
	// the same keep should hold it; the flag keeps keep's shortcut from
	// relying on that.
	replaced bool
}

func (s *spliceSet) size() int64 {
	return s.bytes + int64(cap(s.reuse))*int64(unsafe.Sizeof(rewrite.SpliceReuse{})) +
		int64(cap(s.found))*int64(unsafe.Sizeof((*keptSplice)(nil)))
}

// spliceMemo is safe for concurrent use; a nil *spliceMemo keeps nothing.
type spliceMemo struct {
	sets *rewrite.TakeMemo[state.Key, *spliceSet]
}

// newSpliceMemo returns a memo of up to budget bytes; nil when budget <= 0.
func newSpliceMemo(budget int64) *spliceMemo {
	if budget <= 0 {
		return nil
	}
	return &spliceMemo{rewrite.NewTakeMemo[state.Key](budget, (*spliceSet).size)}
}

// splicesReused lends a build the session's kept edits: prepare sets
// Reuse on the batch's ops, keep stores what the batch made.
type splicesReused struct {
	m     *spliceMemo
	key   state.Key
	lin   conv.BodyLineage
	set   *spliceSet // taken from the memo; nil: none
	reuse []rewrite.SpliceReuse
	// found[i] is the kept edit prepare gave op i as Known (nil: none),
	// so that keep finds an edit the batch took without looking it up.
	found []*keptSplice
}

// prepare takes the session's kept edits and sets Reuse on every op of
// ops (positions of the view whose anchors are anchors), with Known where a
// kept edit may be taken. body must be the agent's body as parsed (lin its
// lineage): the kept edits' offsets are offsets of the body before it.
func (m *spliceMemo) prepare(key state.Key, lin conv.BodyLineage, anchors []string, ops []rewrite.UserTexts) *splicesReused {
	if m == nil || lin.Gen == 0 {
		return nil
	}
	r := &splicesReused{m: m, key: key, lin: lin}
	r.set, _ = m.sets.Take(key)
	if r.set != nil && cap(r.set.reuse) >= len(ops) {
		r.reuse = r.set.reuse[:len(ops)] // all zero (keep)
	} else {
		r.reuse = make([]rewrite.SpliceReuse, len(ops))
	}
	if r.set != nil && cap(r.set.found) >= len(ops) {
		r.found = r.set.found[:len(ops)] // all nil (keep)
	} else {
		r.found = make([]*keptSplice, len(ops))
	}
	valid := r.set != nil && lin.Prev != 0 && lin.Prev == r.set.gen
	for i := range ops {
		ops[i].Reuse = &r.reuse[i]
		if !valid || ops[i].Pos < 0 || ops[i].Pos >= len(anchors) {
			continue
		}
		k, ok := r.set.turns[anchors[ops[i].Pos]]
		if ok && k.at.SpanEnd <= lin.Shared && slices.Equal(k.texts, ops[i].Texts) {
			r.reuse[i].Known = k.at
			r.found[i] = k
		}
	}
	return r
}

// SpliceMetrics is what a Metrics may also implement to count the
// user-text edits of the ledger replay the splice memo gave (taken) and
// those the batch made (the proxy's Prometheus metrics do).
type SpliceMetrics interface {
	UserTextEdits(taken, made int)
}

// keep puts the edits the batch made (or took) in the memo for the
// session's next request, and only those, and counts them in m; ok false
// (the build failed) drops them all.
func (r *splicesReused) keep(m Metrics, anchors []string, ops []rewrite.UserTexts, ok bool) {
	if r == nil || !ok {
		return // the set stays taken: the next request edits every turn
	}
	set := r.set
	if set == nil {
		set = &spliceSet{turns: make(map[string]*keptSplice, len(ops))}
	}
	gen := r.lin.Gen
	set.gen = gen
	taken, remade := 0, 0
	current := 0 // entries of set.turns whose gen is gen
	for i := range ops {
		made := r.reuse[i].Made
		if made.SpanEnd == 0 {
			continue
		}
		if sameSplice(r.reuse[i].Known, made) {
			taken++
		} else {
			remade++
		}
		if ops[i].Pos < 0 || ops[i].Pos >= len(anchors) {
			continue
		}
		a := anchors[ops[i].Pos]
		// The entry prepare gave as Known, when the batch took it, is
		// still the set's (unless replaced above), with this op's texts
		// (prepare compared them): no lookup, no second comparison.
		old, vouched := r.found[i], true
		if old == nil || old.replaced || !sameSplice(old.at, made) {
			old, vouched = set.turns[a], false
		}
		if old != nil {
			if sameSplice(old.at, made) && (vouched || slices.Equal(old.texts, ops[i].Texts)) {
				if old.gen != gen { // taken as it was kept
					old.gen = gen
					current++
				}
				continue
			}
			if old.gen == gen {
				current--
			}
			old.replaced = true
			set.bytes -= keptSize(a, old)
		}
		// The splice's bytes are a slice of the batch's scratch body:
		// copied, so the memo holds only the inserted text.
		made.Splice.Bytes = slices.Clone(made.Splice.Bytes)
		k := &keptSplice{texts: slices.Clone(ops[i].Texts), at: made, gen: gen}
		set.turns[a] = k
		set.bytes += keptSize(a, k)
		current++
	}
	if sm, ok := m.(SpliceMetrics); ok {
		sm.UserTextEdits(taken, remade)
	}
	if current < len(set.turns) { // some edit was not taken for this body: dropped (a long session's sweep cost a map walk per request)
		for a, k := range set.turns {
			if k.gen != gen {
				delete(set.turns, a)
				set.bytes -= keptSize(a, k)
			}
		}
	}
	clear(r.reuse) // nothing reads it past the build
	clear(r.found)
	set.reuse, set.found = r.reuse, r.found
	r.m.sets.Put(r.key, set)
}

// keptSize is an entry's bytes, with the map's and slices' overhead.
func keptSize(anchor string, k *keptSplice) int64 {
	n := 96 + len(anchor) + len(k.at.Splice.Bytes) + 16*len(k.texts)
	for _, t := range k.texts {
		n += len(t)
	}
	return int64(n)
}

// sameSplice reports whether a and b are the same edit, b's bytes a's
// own slice (an edit the batch took from the memo).
func sameSplice(a, b rewrite.TurnSplice) bool {
	return a.SpanStart == b.SpanStart && a.SpanEnd == b.SpanEnd && a.Splice.Start == b.Splice.Start &&
		a.Splice.End == b.Splice.End && rewrite.SameSlice(a.Splice.Bytes, b.Splice.Bytes)
}
