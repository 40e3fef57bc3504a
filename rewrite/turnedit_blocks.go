package rewrite

import (
	"fmt"
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// This file holds the byte-level helpers the Anthropic and Gemini TurnCodec
// implementations share: positional edits of a conversation array, the
// reordering of a reply's content list, and token-count arithmetic.

// BlocksConversation returns, for a valid request body (ParseTrustedRoot), its top-level object
// and the conversation array member key (messages, contents). The array
// must exist: positional edits need it.
func BlocksConversation(body []byte, key string) (root, arr gjson.Result, err error) {
	if root, err = ParseTrustedRoot(body); err != nil {
		return root, arr, err
	}
	arr = jsonkit.Member(root, key)
	if !arr.IsArray() {
		return root, arr, fmt.Errorf("%w: %s must be an array", ErrMalformed, key)
	}
	return root, arr, nil
}

// BlocksElems returns the elements of arr in order (nil unless arr is an
// array), each with its offset in the body arr was read from as Index.
func BlocksElems(arr gjson.Result) []gjson.Result {
	return jsonkit.ElementsOf(nil, arr)
}

// BlocksAt returns the element at pos, or an error naming key when pos is out of
// range.
func BlocksAt(elems []gjson.Result, pos int, key string) (gjson.Result, error) {
	if pos < 0 || pos >= len(elems) {
		return gjson.Result{}, fmt.Errorf("rewrite: %s position %d out of range (%d elements)", key, pos, len(elems))
	}
	return elems[pos], nil
}

// agJoinItems checks that every item is one JSON object and joins them with
// commas, ready to go between array brackets.
func agJoinItems(items [][]byte) ([]byte, error) {
	n := 0
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	for i, it := range items {
		if !jsonkit.Valid(it) {
			return nil, fmt.Errorf("rewrite: item %d to insert is not valid JSON", i)
		}
		if _, ok := jsonkit.RootObject(jsonkit.UnsafeString(it)); !ok {
			return nil, fmt.Errorf("rewrite: item %d to insert is not a JSON object", i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return out, nil
}

// BlocksAppendToMember appends the joined items to the top-level array member
// key, creating the member when it is absent or null.
func BlocksAppendToMember(body []byte, key string, items [][]byte) ([]byte, error) {
	if len(items) == 0 {
		return body, nil
	}
	joined, err := agJoinItems(items)
	if err != nil {
		return nil, err
	}
	root, err := ParseTrustedRoot(body)
	if err != nil {
		return nil, err
	}
	arr := jsonkit.Member(root, key)
	switch {
	case arr.IsArray():
		return jsonkit.AppendElements(body, arr, joined), nil
	case jsonkit.IsNull(arr):
		return jsonkit.SetMember(body, root, key, Enclose('[', joined, ']')), nil
	}
	return nil, fmt.Errorf("%w: %s must be an array", ErrMalformed, key)
}

// BlocksReplaceAt replaces the element at pos of the top-level array key with
// items; with no items the element and one separator next to it go.
func BlocksReplaceAt(body []byte, key string, pos int, items [][]byte) ([]byte, error) {
	_, arr, err := BlocksConversation(body, key)
	if err != nil {
		return nil, err
	}
	elems := BlocksElems(arr)
	el, err := BlocksAt(elems, pos, key)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return agRemoveElem(body, elems, pos), nil
	}
	joined, err := agJoinItems(items)
	if err != nil {
		return nil, err
	}
	return jsonkit.Splice(body, el.Index, jsonkit.ValueEnd(el), joined), nil
}

// agRemoveElem returns body without elems[i] and the separator after it (or,
// for the last element, the one before it).
func agRemoveElem(body []byte, elems []gjson.Result, i int) []byte {
	switch {
	case i+1 < len(elems):
		return jsonkit.Splice(body, elems[i].Index, elems[i+1].Index)
	case i > 0:
		return jsonkit.Splice(body, jsonkit.ValueEnd(elems[i-1]), jsonkit.ValueEnd(elems[i]))
	}
	return jsonkit.Splice(body, elems[i].Index, jsonkit.ValueEnd(elems[i]))
}

// BlocksInsertBefore inserts joined (comma-separated raw values) as elements
// before elems[i] of arr, or at the end of arr when i == len(elems).
func BlocksInsertBefore(body []byte, arr gjson.Result, elems []gjson.Result, i int, joined []byte) []byte {
	if i < len(elems) {
		return jsonkit.Splice(body, elems[i].Index, elems[i].Index, joined, []byte{','})
	}
	return jsonkit.AppendElements(body, arr, joined)
}

// BlocksReorder returns body with the elements of an array (elems, in order)
// rearranged to order, a list of element indices (a subset, each at most
// once). Element k of the result is written in slot k: it keeps the
// separator (comma and whitespace) the original array had before slot k, so
// elements that do not move keep their exact bytes and position, and a
// pretty-printed array stays pretty.
func BlocksReorder(body []byte, elems []gjson.Result, order []int) []byte {
	if len(elems) == 0 {
		return body
	}
	start, stop := elems[0].Index, jsonkit.ValueEnd(elems[len(elems)-1])
	inner := make([]byte, 0, stop-start)
	for k, e := range order {
		if k > 0 {
			inner = append(inner, body[jsonkit.ValueEnd(elems[k-1]):elems[k].Index]...)
		}
		inner = append(inner, elems[e].Raw...)
	}
	return jsonkit.Splice(body, start, stop, inner)
}

// BlocksInner returns the bytes of arr between its first element's start and its
// last element's end (the elements with their separators), or "" when arr is
// empty or not an array.
func BlocksInner(arr gjson.Result) string {
	elems := BlocksElems(arr)
	if len(elems) == 0 {
		return ""
	}
	base := arr.Index
	return arr.Raw[elems[0].Index-base : jsonkit.ValueEnd(elems[len(elems)-1])-base]
}

// BlocksCallOrder computes the element order of a reply content list after
// EditReply: calls holds the element indices of the tool calls (in reply
// order, so call i is element calls[i]). The calls listed in remove are
// dropped; those in first move, in that order, to where the first tool call
// was, ahead of every other call. Duplicates are ignored and a call both
// removed and moved is removed. It returns the order and the number of calls
// left, or an error for an index outside the calls.
func BlocksCallOrder(n int, calls []int, remove, first []int) ([]int, int, error) {
	const (
		keep = iota
		drop
		move
	)
	state := make([]uint8, len(calls))
	for _, list := range [][]int{remove, first} {
		for _, c := range list {
			if c < 0 || c >= len(calls) {
				return nil, 0, fmt.Errorf("rewrite: tool call index %d out of range (%d calls)", c, len(calls))
			}
		}
	}
	for _, c := range remove {
		state[c] = drop
	}
	var moved []int
	for _, c := range first {
		if state[c] == keep {
			state[c] = move
			moved = append(moved, c)
		}
	}
	callAt := make(map[int]int, len(calls))
	for i, e := range calls {
		callAt[e] = i
	}
	order := make([]int, 0, n)
	left := 0
	for e := 0; e < n; e++ {
		c, isCall := callAt[e]
		if isCall && c == 0 {
			for _, m := range moved {
				order = append(order, calls[m])
				left++
			}
		}
		if isCall && state[c] != keep {
			continue
		}
		if isCall {
			left++
		}
		order = append(order, e)
	}
	return order, left, nil
}

// BlocksSetTopMember sets the top-level member key of body to raw (the root is
// re-read from body, so earlier splices are accounted for).
func BlocksSetTopMember(body []byte, key string, raw []byte) ([]byte, error) {
	if _, ok := jsonkit.RootObject(jsonkit.UnsafeString(body)); !ok {
		return nil, ErrNotObject
	}
	return sjson.SetRawBytes(body, key, raw)
}

// BlocksCount reads a token count: an integer member, 0 when absent or not a
// number.
func BlocksCount(obj gjson.Result, key string) int64 {
	v := obj.Get(key)
	if v.Type != gjson.Number {
		return 0
	}
	return v.Int()
}

// BlocksSetCounts returns the object raw (a standalone JSON object) with each
// key of keys set to the matching integer of vals.
func BlocksSetCounts(raw []byte, keys []string, vals []int64) []byte {
	out := raw
	for i, k := range keys {
		obj, ok := jsonkit.RootObject(jsonkit.UnsafeString(out))
		if !ok {
			return out
		}
		out = jsonkit.SetMember(out, obj, k, strconv.AppendInt(nil, vals[i], 10))
	}
	return out
}
