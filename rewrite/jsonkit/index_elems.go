package jsonkit

import "github.com/tidwall/gjson"

// Element spans, for callers that remember what they read from the
// elements of an earlier body (rewrite's index memo) and need to know
// which elements of this one lie where those did.

// ElemSpan returns the byte span body[start:end] of element i of arr, a
// root array member Lookup returned; ok is false when arr is not one or has
// no element i.
func (d *Index) ElemSpan(arr gjson.Result, i int) (start, end int, ok bool) {
	if d == nil || !arr.IsArray() {
		return 0, 0, false
	}
	spans := d.elems(arr)
	if i < 0 || i >= len(spans) {
		return 0, 0, false
	}
	return spans[i].start, spans[i].end, true
}

// ElemCount is the number of elements of arr, a root array member Lookup
// returned, and -1 when arr is not one (or the index is nil).
func (d *Index) ElemCount(arr gjson.Result) int {
	if d == nil || !arr.IsArray() {
		return -1
	}
	spans := d.elems(arr)
	if spans == nil && len(arr.Raw) > 2 {
		return -1
	}
	return len(spans)
}

// EachFrom is Each over the elements of arr from element from on (i counts
// from the start of arr). arr must be a root array member Lookup returned
// (ElemCount >= 0).
func (d *Index) EachFrom(arr gjson.Result, from int, fn func(i int, v gjson.Result) bool) {
	if from <= 0 {
		d.Each(arr, fn)
		return
	}
	spans := d.elems(arr)
	for i := from; i < len(spans); i++ {
		sp := spans[i]
		if !fn(i, ValueAt(d.body[sp.start:sp.end], 0, sp.start)) {
			return
		}
	}
}
