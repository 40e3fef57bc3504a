package rewrite

// Copy runs say how an edit made its output from its source: which spans of
// the output are verbatim copies of the source, and from where. The turn
// engine keeps them with a session's previous request (proxy/turn's
// history memo) so that finding how much of this turn's upstream body it
// shares with the last one costs the length of the edits, not of the
// history: where both bodies copy the same source offset, and the two
// sources were compared equal there, the outputs are equal without being
// compared again (SharedPrefix).

// CopyRun is a span of an edit's output that is a verbatim copy of its
// source: out[Out:Out+Len] == src[Src:Src+Len].
type CopyRun struct {
	Out, Src, Len int
}

// CopyMapper is what a Codec whose edits go through a Parsed may also
// implement: CopyRuns of that Parsed.
type CopyMapper interface {
	CopyRuns(src, out []byte) []CopyRun
}

// copied is the last copying edit made through a Parsed: out from src.
type copied struct {
	src, out []byte
	runs     []CopyRun
}

// CopyRuns returns the copy runs of out, the result of the last edit made
// through p, when that edit made it from src in one copy (in order of
// Out, not overlapping); nil when it did not, or when p does not know
// (an edit in several copies, a body p did not make). The slice is p's:
// read it before the next edit through p.
func (p *Parsed) CopyRuns(src, out []byte) []CopyRun {
	if p == nil || p.copied.runs == nil || !sameBuffer(p.copied.src, src) || !sameBuffer(p.copied.out, out) ||
		len(p.copied.src) != len(src) || len(p.copied.out) != len(out) {
		return nil
	}
	return p.copied.runs
}

// recordCopy notes that out was made from src with runs (the edit's last
// step: any edit through p before it forgets the previous record).
func (p *Parsed) recordCopy(src, out []byte, runs []CopyRun) {
	if p != nil {
		p.copied = copied{src: src, out: out, runs: runs}
	}
}

// appendCopy appends the run out[at:at+n] == src[from:from+n] to runs,
// merging it into the previous run when they touch; empty runs are left
// out.
func appendCopy(runs []CopyRun, at, from, n int) []CopyRun {
	if n <= 0 {
		return runs
	}
	if k := len(runs) - 1; k >= 0 && runs[k].Out+runs[k].Len == at && runs[k].Src+runs[k].Len == from {
		runs[k].Len += n
		return runs
	}
	return append(runs, CopyRun{Out: at, Src: from, Len: n})
}

// splicedRuns appends to runs the copy runs of appendSpliced(dst, body,
// start, end, ss) written at output offset at.
func splicedRuns(runs []CopyRun, at, start, end int, ss []Splice) []CopyRun {
	from := start
	for _, s := range ss {
		runs = appendCopy(runs, at, from, s.Start-from)
		at += s.Start - from + len(s.Bytes)
		from = s.End
	}
	return appendCopy(runs, at, from, end-from)
}

// SharedPrefix is the length of the longest common prefix of a and b,
// where a is made from a source A with copy runs ra, b from a source B with
// copy runs rb, and A[:n] == B[:n] is known. Where a and b copy the same
// offset below n of their sources, their bytes are equal and are not
// compared; everything else (inserted bytes, copies of different offsets
// or of bytes at or past n) is compared byte for byte. The result is
// CommonPrefix(a, b), given runs that are true (each run's output span a
// copy of its source span) and in order of Out, not overlapping.
func SharedPrefix(a, b []byte, ra, rb []CopyRun, n int) int {
	lim := min(len(a), len(b))
	o, i, j := 0, 0, 0
	for o < lim {
		for i < len(ra) && ra[i].Out+ra[i].Len <= o {
			i++
		}
		for j < len(rb) && rb[j].Out+rb[j].Len <= o {
			j++
		}
		next, inA := runBound(ra, i, o, lim)
		nextB, inB := runBound(rb, j, o, lim)
		next = min(next, nextB)
		if inA && inB {
			sa, sb := ra[i].Src+o-ra[i].Out, rb[j].Src+o-rb[j].Out
			if sa == sb && sa < n {
				o = min(next, o+n-sa)
				continue
			}
		}
		k := CommonPrefix(a[o:next], b[o:next])
		if o += k; o < next {
			return o
		}
	}
	return o
}

// runBound is where the run state of output offset o next changes: the
// end of the run rs[i] that holds o (inside true), else the start of the
// next run; at most lim.
func runBound(rs []CopyRun, i, o, lim int) (int, bool) {
	if i >= len(rs) {
		return lim, false
	}
	if rs[i].Out <= o {
		return min(lim, rs[i].Out+rs[i].Len), true
	}
	return min(lim, rs[i].Out), false
}

// ValidCopyRuns reports whether runs fit a output of length outLen made
// from a source of length srcLen, in order of Out and not overlapping
// (what SharedPrefix needs of their shape; their truth is the edit's).
func ValidCopyRuns(runs []CopyRun, outLen, srcLen int) bool {
	at := 0
	for _, r := range runs {
		if r.Len <= 0 || r.Out < at || r.Src < 0 || r.Out+r.Len > outLen || r.Src+r.Len > srcLen {
			return false
		}
		at = r.Out + r.Len
	}
	return true
}
