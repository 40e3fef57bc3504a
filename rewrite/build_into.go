package rewrite

import "bytes"

// BuildTarget lets the last edit of a request (the one whose result goes
// upstream) build that result in the buffer of the body the session's
// previous request sent, writing only the bytes that differ from it.
//
// An agent resends its whole history every turn, and the turn engine's
// edits (a replay of earlier notes, the system note, added tools) land in
// the same places every time, so the body sent upstream repeats the
// previous one up to the new turn. Built into a fresh buffer, that body is
// copied whole: about a tenth of a 1 MB request's time. Built into the
// previous one's buffer, the bytes a copy run would write where the same
// run of the previous body already wrote them are left as they are: where
// both bodies copy the same offset of their agent bodies, below the bytes
// those share (verified by the index memo), the bytes are equal. Inserted
// bytes are compared (they are short) and written when they differ. No
// prefix is trusted on a hash: equality follows from the runs being true
// and the agent bodies being compared byte for byte.
//
// The target's buffer then holds the new body: the previous one is gone,
// except for its first Kept bytes, which the new body repeats.
type BuildTarget struct {
	// Prev is the body the session's previous request sent. The result is
	// built in its buffer (up to its capacity) when it fits.
	Prev []byte
	// PrevRuns says how Prev was made from the previous agent body: true
	// copy runs, in order of Out, not overlapping.
	PrevRuns []CopyRun
	// Agent is the body the edit must be made of for the target to apply
	// (the same slice, not equal bytes), and its first Shared bytes are
	// the previous agent body's.
	Agent  []byte
	Shared int

	// Built is set when the result is in Prev's buffer; Kept is then a
	// length of prefix the result and Prev share (verified; not
	// necessarily the longest).
	Built bool
	Kept  int
}

// BuildTargeter is implemented by the codecs whose edits go through their
// Parsed: BuildInto offers t to the request's next last edit.
type BuildTargeter interface {
	BuildInto(t *BuildTarget)
}

// BuildInto offers t to the next edit through p that returns its result
// (EditMembers' last copy): it builds the result in t's buffer when the
// edit is made of t.Agent and the result fits, and sets t.Built. The offer
// is taken back by that edit whether it used it or not.
func (p *Parsed) BuildInto(t *BuildTarget) {
	if p != nil {
		p.target = t
	}
}

// outBuilder writes an edit's result: appended to a buffer, or, with a
// target, over the previous body in its buffer.
type outBuilder struct {
	out      []byte
	body     []byte
	t        *BuildTarget // nil: plain appends
	prev     []CopyRun    // t.PrevRuns not yet passed
	diverged bool         // a byte past t.Kept was written unverified
}

// into makes b build over t's body; the result's length must fit in t's
// buffer.
func (b *outBuilder) into(t *BuildTarget) {
	b.t, b.out, b.prev = t, t.Prev[:0], t.PrevRuns
	t.Built, t.Kept = true, 0
}

// copyFrom appends body[src:src+n].
func (b *outBuilder) copyFrom(src, n int) {
	if n <= 0 {
		return
	}
	if b.t == nil {
		b.out = append(b.out, b.body[src:src+n]...)
		return
	}
	o := len(b.out)
	b.out = b.out[:o+n]
	k := b.covered(o, src, n)
	if k < n {
		copy(b.out[o+k:], b.body[src+k:src+n])
	}
	b.verified(o, k, n)
}

// insert appends ins.
func (b *outBuilder) insert(ins []byte) {
	if b.t == nil {
		b.out = append(b.out, ins...)
		return
	}
	o, n := len(b.out), len(ins)
	b.out = b.out[:o+n]
	k := 0
	if !b.diverged && o+n <= len(b.t.Prev) && bytes.Equal(b.out[o:o+n], ins) {
		k = n // still Prev's own bytes: Kept goes on
	} else {
		copy(b.out[o:], ins) // past Kept, writing is as cheap as comparing
	}
	b.verified(o, k, n)
}

// spliced appends body[start:end] with ss made.
func (b *outBuilder) spliced(start, end int, ss []Splice) {
	at := start
	for _, s := range ss {
		b.copyFrom(at, s.Start-at)
		b.insert(s.Bytes)
		at = s.End
	}
	b.copyFrom(at, end-at)
}

// verified notes that of the n bytes just written at o, the first k are
// Prev's own.
func (b *outBuilder) verified(o, k, n int) {
	if b.diverged {
		return
	}
	b.t.Kept = o + k
	b.diverged = k < n
}

// covered is how many of the n bytes body[src:] the result takes at o are
// already there: Prev copied the same offset of the previous agent body to
// the same place, and that offset lies in the bytes the agent bodies share.
func (b *outBuilder) covered(o, src, n int) int {
	for len(b.prev) > 0 && b.prev[0].Out+b.prev[0].Len <= o {
		b.prev = b.prev[1:]
	}
	k := 0
	for _, r := range b.prev {
		if r.Out > o+k || r.Src-r.Out != src-o {
			break
		}
		if k = min(r.Out+r.Len, o+n) - o; k == n {
			break
		}
	}
	return max(0, min(k, b.t.Shared-src, len(b.t.Prev)-o))
}

// SameSlice reports whether a and b are the same slice: same start, same
// length (not a comparison of bytes).
func SameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
