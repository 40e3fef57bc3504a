package jsonkit

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Locating through an index. The turn engine edits the body it parsed a
// few times per request (replayed notes, added tools, a system note); each
// edit finds a root member, or an element of the conversation, and without
// the index that means skipping every member before it, the whole history
// included. These methods answer from the index, and MemberReplaced keeps
// an index true across an edit confined to one member's value.

// Covers reports whether d indexes body: the very bytes (same array, same
// length) it was built from or rebased to. Bodies are never modified in
// place, so that is the same content.
func (d *Index) Covers(body []byte) bool {
	return d != nil && len(body) == len(d.body) && len(body) > 0 &&
		unsafe.SliceData(body) == unsafe.StringData(d.body)
}

// member is the position in d.members of the first root member named key
// (decoded, as Lookup compares), or -1.
func (d *Index) member(key string) int {
	for i := range d.members {
		if d.members[i].name() == key {
			return i
		}
	}
	return -1
}

// MemberSpan returns where the value of the root member key lies in the
// body, [start, end); ok is false when there is no such member.
func (d *Index) MemberSpan(key string) (start, end int, ok bool) {
	if d == nil {
		return 0, 0, false
	}
	m := d.member(key)
	if m < 0 {
		return 0, 0, false
	}
	return d.members[m].start, d.members[m].end, true
}

// Elements returns the elements of the root array member key, each with
// its offset in the body as Index; ok is false when key is not an array
// member whose elements the index holds (absent, not an array, or dropped
// by MemberReplaced). An empty array gives no elements and ok true.
func (d *Index) Elements(key string) (elems []gjson.Result, ok bool) {
	return d.AppendElements(nil, key)
}

// AppendElements is Elements appending to dst (the caller's buffer, say a
// pooled one).
func (d *Index) AppendElements(dst []gjson.Result, key string) (elems []gjson.Result, ok bool) {
	ms, ok := d.knownElems(key)
	if !ok {
		return nil, false
	}
	elems = slices.Grow(dst, len(ms.elems))
	for _, sp := range ms.elems {
		elems = append(elems, ValueAt(d.body[sp.start:sp.end], 0, sp.start))
	}
	return elems, true
}

// knownElems is the root member key when it is an array whose elements
// the index holds.
func (d *Index) knownElems(key string) (*memberSpan, bool) {
	if d == nil {
		return nil, false
	}
	m := d.member(key)
	if m < 0 || !d.members[m].isArray {
		return nil, false
	}
	ms := &d.members[m]
	if ms.elems == nil && ms.end-ms.start > 2 && strings.TrimSpace(d.body[ms.start+1:ms.end-1]) != "" {
		return nil, false // elements not known
	}
	return ms, true
}

// ElemSpans are where the elements of one root array member lie in the
// body (MemberElems).
type ElemSpans struct{ spans []span }

// Len is the number of elements.
func (e ElemSpans) Len() int { return len(e.spans) }

// At is where element i (0 <= i < Len) lies, [start, end).
func (e ElemSpans) At(i int) (start, end int) { return e.spans[i].start, e.spans[i].end }

// MemberElems is where the elements of the root array member key lie:
// AppendElements' elements without listing them; ok is false when
// AppendElements' is.
func (d *Index) MemberElems(key string) (ElemSpans, bool) {
	ms, ok := d.knownElems(key)
	if !ok {
		return ElemSpans{}, false
	}
	return ElemSpans{ms.elems}, true
}

// FirstMemberElems is MemberElems for a reader that finds a root member by
// its key as written: it answers only when the first member named key is
// written without escapes (so no earlier member is written key), with
// where the array's value ends in the body (just past its closing
// bracket).
func (d *Index) FirstMemberElems(key string) (end int, es ElemSpans, ok bool) {
	ms, ok := d.knownElems(key)
	if !ok || ms.key != key {
		return 0, ElemSpans{}, false
	}
	return ms.end, ElemSpans{ms.elems}, true
}

// MemberReplaced returns the index of out, which is d's body with the value
// of the root member key, [start, end) as MemberSpan gives it, replaced by
// n bytes that are one JSON value of the same kind (array or not). Every
// other member keeps its key and value, shifted; the replaced member's
// elements are dropped (Elements reports them unknown). The result is nil
// when d has no such member or out is not that body.
func (d *Index) MemberReplaced(out []byte, key string, n int) *Index {
	if d == nil {
		return nil
	}
	m := d.member(key)
	if m < 0 {
		return nil
	}
	return d.MembersReplaced(out, []Replaced{{Key: key, Len: n}})
}

// Replaced is one member MembersReplaced replaces: the root member Key's
// value now has Len bytes.
type Replaced struct {
	Key string
	Len int
}

// MembersReplaced is MemberReplaced for several members at once (distinct
// keys, any order); nil when one is not a member or out is not that body.
func (d *Index) MembersReplaced(out []byte, repl []Replaced) *Index {
	if d == nil {
		return nil
	}
	newLen := make(map[int]int, len(repl))
	total := 0
	for _, r := range repl {
		m := d.member(r.Key)
		if m < 0 {
			return nil
		}
		if _, dup := newLen[m]; dup {
			return nil
		}
		newLen[m] = r.Len
		total += r.Len - (d.members[m].end - d.members[m].start)
	}
	if len(out) != len(d.body)+total {
		return nil
	}
	c := &Index{body: UnsafeString(out), members: make([]memberSpan, len(d.members))}
	delta := 0 // how far this member has moved
	for i, ms := range d.members {
		if delta != 0 {
			ms.keyAt += delta
			ms.start += delta
			ms.end += delta
			if len(ms.elems) > 0 {
				elems := make([]span, len(ms.elems))
				for j, sp := range ms.elems {
					elems[j] = span{sp.start + delta, sp.end + delta}
				}
				ms.elems = elems
			}
		}
		if n, ok := newLen[i]; ok {
			grow := n - (ms.end - ms.start)
			ms.end += grow
			ms.elems = nil
			delta += grow
		}
		ms.key = c.body[ms.keyAt : ms.keyAt+len(ms.key)]
		c.members[i] = ms
	}
	return c
}
