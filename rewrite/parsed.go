package rewrite

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// Parsed is what one request's codec remembers of the body it parsed: the
// body and its index (jsonkit.Index). The turn engine then edits that body
// a few times (ledger replay, added tools, a system note); each edit needs
// a root member or the conversation's elements, and finding them by walking
// the body costs a pass over the whole history per edit. Through Parsed an
// edit finds them in the index, works on a small body holding only the
// member it edits (EditMembers), and leaves Parsed remembering the edited
// body with its index shifted, so the next edit is indexed too.
//
// A Parsed belongs to one request (the codec NewCodec made for it); it is
// not safe for concurrent use. A nil *Parsed remembers nothing: every
// method then behaves as the unindexed path. It holds no state a request
// would notice: it only saves walks, never changes a result.
type Parsed struct {
	idx *jsonkit.Index // indexes the last body remembered; nil: none
	// scratch is the body remembered when it is a pooled buffer an edit
	// through p made (scratch.go): the next edit through p that copies it
	// gives it back. nil: the body remembered is not p's to recycle.
	scratch []byte
	// final is the pooled buffer p last handed to the caller as an edit's
	// result (the body a turn sends upstream): never recycled by p's own
	// edits, only by ReleaseFinal once the caller is done with it.
	final []byte
	// copied is the copy runs of the last edit through p (CopyRuns); every
	// other edit through p forgets them.
	copied copied
	// target is where the next last edit may build its result
	// (BuildInto); nil: none.
	target *BuildTarget
}

// Remember records idx, the index of a body just parsed. The body p
// remembered before is no longer p's to recycle.
func (p *Parsed) Remember(idx *jsonkit.Index) {
	if p != nil {
		p.idx, p.scratch, p.copied = idx, nil, copied{}
	}
}

// remembered records idx, the index of out, an edit of in (the body p
// remembered); out is a pooled buffer when fromPool. When in was p's
// scratch, the edit has copied it and nobody else holds it: it goes back
// to its pool.
func (p *Parsed) remembered(idx *jsonkit.Index, in, out []byte, fromPool bool) {
	if p == nil {
		return
	}
	if p.scratch != nil && sameBuffer(p.scratch, in) && !sameBuffer(in, out) {
		putScratch(p.scratch)
	}
	p.idx, p.scratch, p.copied = idx, nil, copied{}
	if fromPool && idx != nil {
		p.scratch = out
	}
}

// Escape tells p that the body it remembers goes to the caller as it is
// (an edit that changed nothing): p must never recycle it. When that body
// is p's scratch, it becomes the caller's final body (ReleaseFinal).
func (p *Parsed) Escape() {
	if p != nil {
		if p.scratch != nil {
			p.final = p.scratch
		}
		p.scratch = nil
	}
}

// BodyReleaser is implemented by the codecs whose request edits go through
// their Parsed: ReleaseBody is that Parsed's ReleaseFinal. A caller that
// holds the body an edit returned calls it once nothing references that
// body anymore (the turn engine, at the end of the turn); a body the
// codec did not make is left alone.
type BodyReleaser interface {
	ReleaseBody(body []byte)
}

// ReleaseFinal gives back body, the result of an edit through p that the
// caller no longer needs, nor anything it handed it to: its buffer goes
// back to the pool when p made it (the last final body p handed out) and
// is left to the collector otherwise. p forgets body and its index.
//
// The turn engine calls it once the turn is over; until then the body is
// the request upstream and the base of follow-ups.
func (p *Parsed) ReleaseFinal(body []byte) {
	if p == nil || p.final == nil || !sameBuffer(p.final, body) {
		return
	}
	if p.idx.Covers(body) {
		p.idx = nil
	}
	putScratch(p.final)
	p.final = nil
	p.copied = copied{}
}

// sameBuffer reports whether a and b share their first byte.
func sameBuffer(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// BodyIndexer is what a Codec whose parses go through a Parsed may also
// implement: IndexOf of that Parsed. An index is never changed once built
// (an edit makes a new one), so the one it returns may be read while the
// codec goes on editing.
type BodyIndexer interface {
	IndexOf(body []byte) *jsonkit.Index
}

// IndexOf returns the index of body when body is the body remembered (the
// same bytes: same array, same length), else nil.
func (p *Parsed) IndexOf(body []byte) *jsonkit.Index {
	if p == nil || !p.idx.Covers(body) {
		return nil
	}
	return p.idx
}

// Elements returns the elements of body's root array member key from the
// index when body is the body remembered; ok is false otherwise (the caller
// walks the body).
//
// The slice comes from a pool (a long conversation's is ~100 KB): give it
// back with ReleaseElems once nothing uses it, or leave it to the
// collector.
func (p *Parsed) Elements(body []byte, key string) ([]gjson.Result, bool) {
	idx := p.IndexOf(body)
	if idx == nil {
		return nil, false
	}
	buf, _ := elemsPool.Get().(*[]gjson.Result)
	if buf == nil {
		buf = new([]gjson.Result)
	}
	elems, ok := idx.AppendElements((*buf)[:0], key)
	if !ok {
		elemsPool.Put(buf)
	}
	return elems, ok
}

// elemsPool holds element slices Elements returns and ReleaseElems takes
// back.
var elemsPool sync.Pool

// ReleaseElems gives elems, which nothing uses anymore, to the pool
// Elements takes its slices from (cleared: the results alias their body).
func ReleaseElems(elems []gjson.Result) {
	if cap(elems) == 0 {
		return
	}
	elems = elems[:cap(elems)]
	clear(elems)
	elems = elems[:0]
	elemsPool.Put(&elems)
}

// MemberOp is one edit EditMembers applies: Op edits nothing but the
// value of the root member Key ("" : Op edits anything, and runs on the
// whole body).
type MemberOp struct {
	Key string
	Op  func(body []byte) ([]byte, error)
	// Insert, when set, says what Op does to the member's value as an
	// insertion: ins at offset at of the value (ok false: not for this
	// value; Op then runs). EditMembers then puts ins in the one copy of
	// the body it makes, without running Op or copying the value; the
	// bytes must be those Op gives.
	Insert func(value []byte) (at int, ins []byte, ok bool)
	// Splices, when set, are what Op does to the member's value, worked
	// out on the body EditMembers is given: replacements inside the
	// value, in order, not overlapping. EditMembers puts them in its one
	// copy of the body when the op is the first on its member, as Insert.
	Splices []Splice
	// InsertHead says that Insert reads only the first element of the
	// member's array value and whether it has one. EditMembers may then
	// make the insertion on the value as it was given, next to an earlier
	// op's splices of the member, when those all start after the first
	// element and the insertion falls inside it or before it: the value
	// those splices leave has the same first element at the same place,
	// so Insert would find the same point in it.
	InsertHead bool
}

// Splice replaces body[Start:End] by Bytes.
type Splice struct {
	Start, End int
	Bytes      []byte
}

// splicedLen is the length of body[start:end] with ss made (ss in order,
// inside the span).
func splicedLen(start, end int, ss []Splice) int {
	n := end - start
	for _, s := range ss {
		n += len(s.Bytes) - (s.End - s.Start)
	}
	return n
}

// appendSpliced appends body[start:end] with ss made to dst.
func appendSpliced(dst, body []byte, start, end int, ss []Splice) []byte {
	b := outBuilder{out: dst, body: body}
	b.spliced(start, end, ss)
	return b.out
}

// A body an edit through p returns may be one of p's pooled buffers
// (scratch.go): it stays valid until the next edit through p, which copies
// it into the body it returns and recycles it. The turn engine's build is
// such a chain (ledger replay, then request edits); its final body is a
// pooled buffer too (put), which stays the caller's until it calls
// ReleaseFinal (the turn engine, when the turn is over).

// EditMembers returns body with ops applied in order. While body is the
// body remembered and an op's member exists, the op runs on a small body
// holding only that member ({"key":value}, the value as the ops before it
// left it); the new values are put in place in one copy of body at the end,
// and Parsed then remembers the result. An op without a key, or whose
// member is absent, or that leaves its small body other than a one-member
// object with the same key and a value of the same kind (array or not),
// runs on the whole body (after the edits before it are put in place), and
// Parsed forgets. The bytes are those of applying every op to the whole
// body in turn.
func (p *Parsed) EditMembers(body []byte, ops []MemberOp) ([]byte, error) {
	idx := p.IndexOf(body)
	edits := make([]memberEdit, 0, len(ops))
	for i, op := range ops {
		start, end, ok := idx.MemberSpan(op.Key)
		if op.Key == "" || !ok {
			return p.editWhole(p.put(body, idx, edits, false), ops[i:])
		}
		k := slices.IndexFunc(edits, func(e memberEdit) bool { return e.key == op.Key })
		if op.Splices != nil && k < 0 && splicesInside(op.Splices, start, end) {
			edits = append(edits, memberEdit{key: op.Key, start: start, end: end, splices: op.Splices})
			continue
		}
		if op.InsertHead && op.Insert != nil && k >= 0 && edits[k].splices != nil {
			if s, ok := headInsertion(idx, op, body, start, end, edits[k].splices); ok {
				edits[k].splices = append([]Splice{s}, edits[k].splices...)
				continue
			}
		}
		if op.Insert != nil && k < 0 {
			if at, ins, ok := op.Insert(body[start:end]); ok {
				edits = append(edits, memberEdit{key: op.Key, start: start, end: end, splices: []Splice{{start + at, start + at, ins}}})
				continue
			}
		}
		cur := body[start:end]
		if k >= 0 {
			cur = edits[k].whole(body)
		}
		if cur[0] == '[' {
			arrayOpCopies.Add(1)
		}
		prefix := AppendMemberPrefix(nil, op.Key)
		mini := make([]byte, 0, len(prefix)+len(cur)+1)
		mini = append(append(append(mini, prefix...), cur...), '}')
		edited, err := op.Op(mini)
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(edited, prefix) || len(edited) < len(prefix)+2 || edited[len(edited)-1] != '}' ||
			(edited[len(prefix)] == '[') != (cur[0] == '[') {
			return p.editWhole(p.put(body, idx, edits, false), ops[i:])
		}
		value := edited[len(prefix) : len(edited)-1]
		if k >= 0 {
			edits[k].value, edits[k].splices = value, nil
		} else {
			edits = append(edits, memberEdit{key: op.Key, start: start, end: end, value: value})
		}
	}
	return p.put(body, idx, edits, true), nil
}

// arrayOpCopies counts the array values (tools, conversations: long)
// EditMembers copied to run an op on them (tests check that insertions
// and splices went in without).
var arrayOpCopies atomic.Int64

// headInsertion is op's insertion (InsertHead) into the array value
// body[start:end] as a splice that goes before ss, the splices an earlier
// op made of it; ok is false unless the value has a first element, ss all
// start at or after its end, and the insertion point lies before that end.
func headInsertion(idx *jsonkit.Index, op MemberOp, body []byte, start, end int, ss []Splice) (Splice, bool) {
	elems, ok := idx.MemberElems(op.Key)
	if !ok || elems.Len() == 0 {
		return Splice{}, false
	}
	_, firstEnd := elems.At(0)
	if len(ss) == 0 || ss[0].Start < firstEnd {
		return Splice{}, false
	}
	at, ins, ok := op.Insert(body[start:end])
	if !ok || start+at >= firstEnd {
		return Splice{}, false
	}
	return Splice{Start: start + at, End: start + at, Bytes: ins}, true
}

// memberEdit is a member value EditMembers replaces: body[start:end] by
// value, or, when splices is set, by itself with the splices made.
type memberEdit struct {
	key        string
	start, end int
	value      []byte
	splices    []Splice
}

// splicesInside reports whether ss are in order, not overlapping, and
// inside [start, end].
func splicesInside(ss []Splice, start, end int) bool {
	at := start
	for _, s := range ss {
		if s.Start < at || s.End < s.Start || s.End > end {
			return false
		}
		at = s.End
	}
	return true
}

// size is the length of the edited value.
func (e *memberEdit) size() int {
	if e.splices == nil {
		return len(e.value)
	}
	return splicedLen(e.start, e.end, e.splices)
}

// whole returns the edited value as one slice (a copy for splices).
func (e *memberEdit) whole(body []byte) []byte {
	if e.splices == nil {
		return e.value
	}
	return appendSpliced(make([]byte, 0, e.size()), body, e.start, e.end, e.splices)
}

// put returns body (indexed by idx) with edits in place, in one copy, and
// remembers the result; body itself when there are none. last says the
// result is the edit's (no op follows): it is then built in the target
// BuildInto offered, when that applies.
func (p *Parsed) put(body []byte, idx *jsonkit.Index, edits []memberEdit, last bool) []byte {
	t := p.target
	if last {
		p.target = nil // one offer, one edit
	}
	if len(edits) == 0 {
		p.Escape() // body goes to the caller as it is
		return body
	}
	slices.SortFunc(edits, func(a, b memberEdit) int { return a.start - b.start })
	n := len(body)
	for _, e := range edits {
		n += e.size() - (e.end - e.start)
	}
	b := outBuilder{body: body}
	pooled := false
	if last && t != nil && SameSlice(body, t.Agent) && cap(t.Prev) >= n && !overlapping(body, t.Prev) {
		b.into(t)
	} else {
		b.out = getScratch(n) // the caller's; back with ReleaseFinal
		pooled = b.out != nil
		if !pooled {
			b.out = make([]byte, 0, n)
		}
	}
	at := 0
	repl := make([]jsonkit.Replaced, len(edits))
	nruns := 2*len(edits) + 1
	for i := range edits {
		nruns += 2 * len(edits[i].splices)
	}
	runs := make([]CopyRun, 0, nruns)
	for i := range edits {
		e := &edits[i]
		runs = appendCopy(runs, len(b.out), at, e.start-at)
		b.copyFrom(at, e.start-at)
		if e.splices != nil {
			runs = splicedRuns(runs, len(b.out), e.start, e.end, e.splices)
			b.spliced(e.start, e.end, e.splices)
		} else {
			b.insert(e.value)
		}
		at = e.end
		repl[i] = jsonkit.Replaced{Key: e.key, Len: e.size()}
	}
	runs = appendCopy(runs, len(b.out), at, len(body)-at)
	b.copyFrom(at, len(body)-at)
	out := b.out
	p.remembered(idx.MembersReplaced(out, repl), body, out, false)
	p.recordCopy(body, out, runs)
	if pooled {
		p.final = out
	}
	return out
}

// overlapping reports whether a and b share any byte of memory (up to
// their capacities).
func overlapping(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// editWhole applies ops to the whole body in turn; p forgets.
func (p *Parsed) editWhole(body []byte, ops []MemberOp) ([]byte, error) {
	p.Remember(nil) // body, even a scratch one, may be returned as it is
	for _, op := range ops {
		var err error
		if body, err = op.Op(body); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// memberEdited tells p that out is body with edits confined to the value of
// its root member key, n bytes longer (or shorter, n < 0) than before, so
// that p keeps indexing the result; p forgets when body was not the body
// it remembered. out is a buffer from scratchFor when fromPool.
func (p *Parsed) memberEdited(body, out []byte, key string, n int, fromPool bool) {
	idx := p.IndexOf(body)
	start, end, ok := idx.MemberSpan(key)
	if !ok {
		p.Remember(nil)
		return
	}
	p.remembered(idx.MemberReplaced(out, key, end-start+n), body, out, fromPool)
}

// scratchFor returns an empty buffer for an n-byte edit of body: pooled
// (fromPool) when body is the body p remembers, so that it can come back
// once the next edit has copied it; else a plain allocation.
func (p *Parsed) scratchFor(body []byte, n int) (buf []byte, fromPool bool) {
	if p.IndexOf(body) != nil {
		if b := getScratch(n); b != nil {
			return b, true
		}
	}
	return make([]byte, 0, n), false
}

// AppendMemberPrefix appends `{"key":` to dst, the key quoted as JSON.
func AppendMemberPrefix(dst []byte, key string) []byte {
	dst = append(dst, '{')
	dst = jsonkit.AppendString(dst, key)
	return append(dst, ':')
}
