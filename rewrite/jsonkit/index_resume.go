package jsonkit

import "slices"

// Resuming validation. An agent resends its whole history on every request
// and adds a few KB at the end of the conversation array: all of a body up
// to its newest elements is the previous body's, byte for byte. Validating
// the previous body took the validator through those same bytes, so its
// state at the end of the last shared element is known (inside the root
// object, inside that member's array, just past an element); validation
// resumes there and reads only the rest. The caller supplies the previous
// body's index and how many leading bytes the two bodies share, which it
// found by comparing them: nothing is taken on trust from a hash.
//
// The members after the conversation are usually the previous body's too:
// Claude Code sends its system prompt and tools (tens of KB) after the
// messages. When the rest of a body from the end of the resumed array on
// is the rest of the previous body from the end of its array, byte for
// byte (one comparison), the validator would read the same bytes from the
// same state (in the root object, just past a member's value): it reads
// none of them, and the previous index's spans of those members move by
// the difference in the array's length.

// ValidIndexedFrom is ValidIndexed(body) for a body whose first shared
// bytes equal those of prev's body (prev from ValidIndexed or
// ValidIndexedFrom over bytes that have not changed since; shared at most
// the length of the two bodies' common prefix). It validates and indexes
// only what follows the last element of a root array member that lies
// inside the shared bytes, and validates body whole when there is none.
// The result is the same as ValidIndexed's.
func ValidIndexedFrom(body []byte, prev *Index, shared int) (*Index, bool) {
	// An element must end before the last shared byte: a number ends
	// where the byte after it is not a digit, so that byte must be shared.
	shared = min(shared, len(body), len(prev.body))
	m, k := prev.resumePoint(shared - 1)
	if m < 0 {
		return ValidIndexed(body)
	}
	idx := &Index{body: UnsafeString(body), members: make([]memberSpan, m+1, len(prev.members)+1), resumed: m + 1, shared: shared}
	for i := range m + 1 {
		ms := prev.members[i]
		ms.key = idx.body[ms.keyAt : ms.keyAt+len(ms.key)]
		idx.members[i] = ms
	}
	last := &idx.members[m]
	from := last.elems[k-1].end
	last.elems = append(make([]span, 0, len(last.elems)+8), last.elems[:k]...)
	last.end = 0 // open again: note adds the elements that follow
	v := validator{b: body, i: from, idx: idx}
	// In the array (depth 2) after an element, then in the root object
	// (depth 1) after that member's value.
	if !v.rest(2, ']') {
		return nil, false
	}
	idx.note(1, '}', last.start, v.i)
	if prev.sameTail(m, body[v.i:]) {
		idx.members = appendShifted(idx.members, prev.members[m+1:], v.i-prev.members[m].end, idx.body)
		idx.tailKept = true
		return idx, true
	}
	if !v.rest(1, '}') {
		return nil, false
	}
	v.ws()
	if v.i != len(body) {
		return nil, false
	}
	return idx, true
}

// sameTail reports whether rest is d's body from the end of member m's
// value on, byte for byte.
func (d *Index) sameTail(m int, rest []byte) bool {
	tail := d.body[d.members[m].end:]
	return len(rest) == len(tail) && UnsafeString(rest) == tail
}

// appendShifted appends to dst the spans of members (an index's, of a body
// whose bytes they cover are in body delta bytes later), moved by delta and
// their keys sliced from body; element spans are copied, not shared.
func appendShifted(dst, members []memberSpan, delta int, body string) []memberSpan {
	for _, ms := range members {
		ms.keyAt += delta
		ms.start += delta
		ms.end += delta
		ms.key = body[ms.keyAt : ms.keyAt+len(ms.key)]
		if ms.elems != nil {
			elems := make([]span, len(ms.elems))
			for i, e := range ms.elems {
				elems[i] = span{e.start + delta, e.end + delta}
			}
			ms.elems = elems
		}
		dst = append(dst, ms)
	}
	return dst
}

// resumePoint is where validation of a body sharing d.body's first shared
// bytes can resume: the last root member m whose value is an array with
// elements, the first k of them (k >= 1) ending inside the shared bytes.
// m is -1 when there is none.
func (d *Index) resumePoint(shared int) (m, k int) {
	if d == nil {
		return -1, 0
	}
	for i := len(d.members) - 1; i >= 0; i-- {
		ms := &d.members[i]
		if !ms.isArray || len(ms.elems) == 0 || ms.elems[0].end > shared {
			continue
		}
		// The elements ending inside the shared bytes: binary search.
		lo, hi := 1, len(ms.elems)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if ms.elems[mid-1].end <= shared {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return i, lo
	}
	return -1, 0
}

// Rebase returns a copy of d for body, a copy of d's body (the same
// bytes): an index that outlives the buffer it was made from. The element
// spans are offsets, valid in both, and no index changes them once it is
// built, so the two share them (capped: an append copies): copying them
// was a tenth of the bytes a long conversation's request allocated.
func (d *Index) Rebase(body []byte) *Index {
	c := &Index{body: UnsafeString(body), members: make([]memberSpan, len(d.members))}
	for i, ms := range d.members {
		ms.key = c.body[ms.keyAt : ms.keyAt+len(ms.key)]
		ms.elems = slices.Clip(ms.elems)
		c.members[i] = ms
	}
	return c
}

// Bytes is the size of d's body.
func (d *Index) Bytes() int { return len(d.body) }
