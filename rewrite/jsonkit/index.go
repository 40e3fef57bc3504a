package jsonkit

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Index is what validating a request body learns on the way about its
// top level: where each member of the root object is and, for array
// members (messages, tools, system blocks, input items, contents), where
// each element is. With it, a codec's ParseRequest reads the members it needs and
// walks the conversation without scanning the body again: validation is the
// only full pass.
type Index struct {
	body    string
	members []memberSpan
	// resumed is 1 + the member ValidIndexedFrom resumed in (0: the body
	// was validated whole), shared how many leading bytes it was told the
	// two bodies share, tailKept whether the members after it were taken
	// from the earlier index (their bytes unchanged): Unchanged.
	resumed, shared int
	tailKept        bool
}

// Unchanged reports whether root member i of d holds the bytes member i of
// the index d was resumed from held (ValidIndexedFrom): a member that ends
// before the last shared byte, or one after the member validation resumed
// in when the rest of the body was the earlier body's rest. Always false
// for an index of a body validated whole.
func (d *Index) Unchanged(i int) bool {
	return d != nil && d.resumed > 0 && i >= 0 && i < len(d.members) &&
		(d.members[i].end < d.shared || (d.tailKept && i > d.resumed-1))
}

// SameSpans reports whether d and o index the same bytes the same way (how
// each was made aside: Unchanged may differ).
func (d *Index) SameSpans(o *Index) bool {
	if d == nil || o == nil {
		return d == o
	}
	if d.body != o.body || len(d.members) != len(o.members) {
		return false
	}
	for i := range d.members {
		a, b := &d.members[i], &o.members[i]
		if a.key != b.key || a.keyAt != b.keyAt || a.start != b.start || a.end != b.end || a.isArray != b.isArray || !slices.Equal(a.elems, b.elems) {
			return false
		}
	}
	return true
}

// Resumed reports whether d was made by ValidIndexedFrom from an earlier
// index (not by validating the body whole), and whether the members after
// the conversation were taken from it too.
func (d *Index) Resumed() (resumed, tailKept bool) {
	return d != nil && d.resumed > 0, d != nil && d.tailKept
}

// MemberEnd is where the value of the first root member named key ends;
// ok is false when there is none.
func (d *Index) MemberEnd(key string) (end int, ok bool) {
	for i := range d.members {
		if m := &d.members[i]; m.name() == key {
			return m.end, true
		}
	}
	return 0, false
}

// MemberAt is the position of the root member whose value starts at byte
// start (a Result's Index from Lookup), -1 when none does.
func (d *Index) MemberAt(start int) int {
	for i := range d.members {
		if d.members[i].start == start {
			return i
		}
	}
	return -1
}

type memberSpan struct {
	key        string // raw key text between the quotes (escapes not decoded)
	keyAt      int    // the key text's offset in the body
	start, end int    // the value
	elems      []span // elements, when the value is an array
	isArray    bool
}

type span struct{ start, end int }

// name is the member's key, JSON escapes decoded.
func (m *memberSpan) name() string {
	if strings.IndexByte(m.key, '\\') < 0 {
		return m.key
	}
	return gjson.Parse(`"` + m.key + `"`).Str
}

// key notes the next root member's key, body[start:end] without its
// quotes (the validator calls it at depth 1).
func (d *Index) key(start, end int) {
	d.members = append(d.members, memberSpan{key: d.body[start:end], keyAt: start})
}

// note records a value the validator finished: a root member's value
// (depth 1, object) or an element of a root member that is an array
// (depth 2, array).
func (d *Index) note(depth int, close byte, start, end int) {
	if len(d.members) == 0 {
		return // the root is not an object
	}
	m := &d.members[len(d.members)-1]
	switch {
	case depth == 1 && close == '}':
		m.start, m.end = start, end
		m.isArray = d.body[start] == '['
	case depth == 2 && close == ']' && m.end == 0:
		// An element of the array that is the open member's value (the
		// only container at depth 2 that closes with ']').
		m.elems = append(m.elems, span{start, end})
	}
}

// ValidIndexed validates body as Valid does and indexes its top level in
// the same pass. ok is false when body is not valid JSON; the index of a
// valid body whose top level is not an object has no members. The index
// aliases body.
func ValidIndexed(body []byte) (idx *Index, ok bool) {
	idx = &Index{body: UnsafeString(body)}
	v := validator{b: body, idx: idx}
	v.ws()
	ok = v.value(0)
	v.ws()
	if !ok || v.i != len(body) {
		return nil, false
	}
	return idx, true
}

// EachMember calls fn with each root member in order, its key decoded,
// until fn returns false.
func (d *Index) EachMember(fn func(key string, v gjson.Result) bool) {
	for i := range d.members {
		m := &d.members[i]
		if !fn(m.name(), ValueAt(d.body[m.start:m.end], 0, m.start)) {
			return
		}
	}
}

// Lookup fills out[i] with the root member named keys[i] (the first when a
// key repeats), as Members does on the root object.
func (d *Index) Lookup(keys []string, out []gjson.Result) {
	for i := range d.members {
		m := &d.members[i]
		key := m.name()
		for k, want := range keys {
			if !out[k].Exists() && key == want {
				out[k] = ValueAt(d.body[m.start:m.end], 0, m.start)
				break
			}
		}
	}
}

// elems returns the element spans of the root member whose value is arr
// (a result Lookup returned), or nil when arr is not such an array.
func (d *Index) elems(arr gjson.Result) []span {
	for i := range d.members {
		if m := &d.members[i]; m.isArray && m.start == arr.Index && m.end == arr.Index+len(arr.Raw) {
			return m.elems
		}
	}
	return nil
}

// Each calls fn with each element of arr, a root array member, like
// EachElement but from the index (EachElement itself for a nil index or any
// other array).
func (d *Index) Each(arr gjson.Result, fn func(i int, v gjson.Result) bool) {
	if d == nil || !arr.IsArray() {
		EachElement(arr, fn)
		return
	}
	spans := d.elems(arr)
	if spans == nil && len(arr.Raw) > 2 {
		EachElement(arr, fn) // not a root member (cannot happen from Lookup), or empty
		return
	}
	for i, sp := range spans {
		if !fn(i, ValueAt(d.body[sp.start:sp.end], 0, sp.start)) {
			return
		}
	}
}
