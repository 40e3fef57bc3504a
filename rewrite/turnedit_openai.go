package rewrite

import (
	"fmt"
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the byte-level helpers the OpenAI turn codecs (Chat and
// Responses) share: element lists and splices of JSON arrays, member
// deletion, call-order planning for EditReply and usage merging for
// MergeReplies. Every helper returns a new slice and never modifies its
// input.

// OpenAIJoin joins raw items with commas.
func OpenAIJoin(items [][]byte) []byte {
	n := len(items)
	for _, it := range items {
		n += len(it)
	}
	out := make([]byte, 0, n)
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return out
}

// OpenAICheckItems reports an error unless every item is one valid JSON object,
// so that splicing the items keeps the body valid.
func OpenAICheckItems(items [][]byte) error {
	for i, it := range items {
		if !jsonkit.Valid(it) {
			return fmt.Errorf("rewrite: item %d to insert is not valid JSON", i)
		}
		if _, ok := jsonkit.RootObject(jsonkit.UnsafeString(it)); !ok {
			return fmt.Errorf("rewrite: item %d to insert is not a JSON object", i)
		}
	}
	return nil
}

// OpenAISpliceElems returns body with the elements [s, e) of arr replaced by
// items (s == e inserts before element s; e == len(elems) may append). elems
// must be BlocksElems(arr), and 0 <= s <= e <= len(elems). Whitespace around
// untouched elements is kept; removing every element leaves the array's
// inner whitespace.
func OpenAISpliceElems(body []byte, arr gjson.Result, elems []gjson.Result, s, e int, items [][]byte) []byte {
	n := len(elems)
	ins := OpenAIJoin(items)
	switch {
	case len(items) == 0 && s == e:
		return append([]byte(nil), body...)
	case len(items) == 0: // removal: take a separator with the elements
		switch {
		case s > 0:
			return jsonkit.Splice(body, jsonkit.ValueEnd(elems[s-1]), jsonkit.ValueEnd(elems[e-1]))
		case e < n:
			return jsonkit.Splice(body, elems[0].Index, elems[e].Index)
		}
		return jsonkit.Splice(body, elems[0].Index, jsonkit.ValueEnd(elems[n-1]))
	case s < e:
		return jsonkit.Splice(body, elems[s].Index, jsonkit.ValueEnd(elems[e-1]), ins)
	case n == 0:
		pos := arr.Index + 1
		return jsonkit.Splice(body, pos, pos, ins)
	case s == n:
		pos := jsonkit.ValueEnd(elems[n-1])
		return jsonkit.Splice(body, pos, pos, []byte{','}, ins)
	}
	pos := elems[s].Index
	return jsonkit.Splice(body, pos, pos, ins, []byte{','})
}

// OpenAIReorderElems returns body with the elements of an array rewritten as
// elems[order[0]], elems[order[1]], … (a subset, in any order). The
// separators between the original slots are reused in slot order, so a
// pretty-printed array keeps its layout. elems must be non-empty.
func OpenAIReorderElems(body []byte, elems []gjson.Result, order []int) []byte {
	var ins []byte
	for k, i := range order {
		if k > 0 {
			ins = append(ins, body[jsonkit.ValueEnd(elems[k-1]):elems[k].Index]...)
		}
		ins = append(ins, elems[i].Raw...)
	}
	return jsonkit.Splice(body, elems[0].Index, jsonkit.ValueEnd(elems[len(elems)-1]), ins)
}

// OpenAIDeleteMember returns body without the first member key of obj (a no-op
// copy when there is none), taking one separating comma with it.
func OpenAIDeleteMember(body []byte, obj gjson.Result, key string) []byte {
	var keys, vals []gjson.Result
	obj.ForEach(func(k, v gjson.Result) bool {
		keys, vals = append(keys, k), append(vals, v)
		return true
	})
	for i, k := range keys {
		if k.Str != key {
			continue
		}
		switch {
		case i > 0:
			return jsonkit.Splice(body, jsonkit.ValueEnd(vals[i-1]), jsonkit.ValueEnd(vals[i]))
		case i+1 < len(keys):
			return jsonkit.Splice(body, k.Index, keys[i+1].Index)
		}
		return jsonkit.Splice(body, k.Index, jsonkit.ValueEnd(vals[i]))
	}
	return append([]byte(nil), body...)
}

// OpenAICallOrder plans EditReply over n tool calls: the calls in first, in that
// order, then every other call not in remove, in reply order. An index out of
// range, listed in both remove and first, or twice in first is an error.
func OpenAICallOrder(n int, remove, first []int) ([]int, error) {
	state := make([]byte, n) // 0 keep, 1 removed, 2 moved first
	for _, i := range remove {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("rewrite: tool call %d to remove is out of range (%d calls)", i, n)
		}
		state[i] = 1
	}
	for _, i := range first {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("rewrite: tool call %d to move is out of range (%d calls)", i, n)
		}
		switch state[i] {
		case 1:
			return nil, fmt.Errorf("rewrite: tool call %d is both removed and moved", i)
		case 2:
			return nil, fmt.Errorf("rewrite: tool call %d is moved twice", i)
		}
		state[i] = 2
	}
	order := append(make([]int, 0, n), first...)
	for i, s := range state {
		if s == 0 {
			order = append(order, i)
		}
	}
	return order, nil
}

// OpenAIUsageKeys names the usage members of one OpenAI API.
type OpenAIUsageKeys struct {
	In, Out, Total string
	Details        string // the object holding reasoning (under out)
	Reasoning      string
}

// OpenAIMergeUsage returns the usage of a merged reply: next's usage object byte
// for byte except that out (and details.reasoning, when next has the
// details object) is the sum of both replies', and total, when next has it,
// is next's in plus the summed out. next's input count is kept, not summed:
// the follow-up's prompt already holds the whole conversation, and agents
// read the input count as the context size. It returns nil when next has no
// usage object (the caller keeps first's), and next's raw when first has
// none.
func OpenAIMergeUsage(fu, nu gjson.Result, k OpenAIUsageKeys) []byte {
	if !nu.IsObject() {
		return nil
	}
	buf := []byte(nu.Raw)
	if !fu.IsObject() {
		return buf
	}
	get := func(r gjson.Result, key string) (int64, bool) {
		v := r.Get(key)
		return v.Int(), v.Type == gjson.Number
	}
	fo, fok := get(fu, k.Out)
	no, nok := get(nu, k.Out)
	if !fok && !nok {
		return buf
	}
	out := fo + no
	root, _ := jsonkit.RootObject(jsonkit.UnsafeString(buf))
	buf = jsonkit.SetMember(buf, root, k.Out, strconv.AppendInt(nil, out, 10))
	if _, ok := get(nu, k.Total); ok {
		in, _ := get(nu, k.In)
		root, _ = jsonkit.RootObject(jsonkit.UnsafeString(buf))
		buf = jsonkit.SetMember(buf, root, k.Total, strconv.AppendInt(nil, in+out, 10))
	}
	fr, frok := get(fu.Get(k.Details), k.Reasoning)
	nr, nrok := get(nu.Get(k.Details), k.Reasoning)
	if frok || nrok {
		root, _ = jsonkit.RootObject(jsonkit.UnsafeString(buf))
		if d := root.Get(k.Details); d.IsObject() {
			buf = jsonkit.SetMember(buf, d, k.Reasoning, strconv.AppendInt(nil, fr+nr, 10))
		}
	}
	return buf
}

// OpenAIMergeText merges two text-like message members (content, refusal,
// reasoning_content) of consecutive replies: strings are concatenated byte
// for byte inside one literal, part arrays are concatenated, and a string
// meeting an array becomes a text part. It returns nil when b adds nothing
// (absent or null), and b's raw when a is absent or null.
func OpenAIMergeText(a, b gjson.Result, part string) ([]byte, error) {
	if jsonkit.IsNull(b) {
		return nil, nil
	}
	if jsonkit.IsNull(a) {
		return []byte(b.Raw), nil
	}
	toParts := func(r gjson.Result) ([]byte, bool) {
		switch {
		case r.Type == gjson.String:
			p := append([]byte(`{"type":`), jsonkit.Quote(part)...)
			p = append(p, `,"text":`...)
			p = append(p, r.Raw...)
			return append(p, '}'), true
		case r.IsArray():
			return []byte(OpenAIInnerString(r)), true
		}
		return nil, false
	}
	if a.Type == gjson.String && b.Type == gjson.String {
		out := append([]byte(nil), a.Raw[:len(a.Raw)-1]...)
		return append(out, b.Raw[1:]...), nil
	}
	pa, oka := toParts(a)
	pb, okb := toParts(b)
	if !oka || !okb {
		return nil, fmt.Errorf("%w: message content is neither a string nor an array", ErrMalformedReply)
	}
	out := []byte{'['}
	out = append(out, pa...)
	if len(pa) > 0 && len(pb) > 0 {
		out = append(out, ',')
	}
	out = append(out, pb...)
	return append(out, ']'), nil
}

// OpenAIInnerString returns the bytes of an array result from its first
// element's first byte to its last element's last byte (separators and
// whitespace between elements kept); "" for an empty or non-array result.
func OpenAIInnerString(arr gjson.Result) string {
	elems := BlocksElems(arr)
	if len(elems) == 0 {
		return ""
	}
	return arr.Raw[elems[0].Index-arr.Index : jsonkit.ValueEnd(elems[len(elems)-1])-arr.Index]
}

// OpenAIPosErr reports a message position outside the view.
func OpenAIPosErr(pos, n int) error {
	return fmt.Errorf("rewrite: message %d is out of range (%d messages)", pos, n)
}
