package jsonkit

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Fast iteration over JSON containers. gjson's ForEach decodes every value
// it passes (unescaping strings, scanning containers to find their end) even
// when the caller wants one member; the request path walks 50 KB
// conversations several times, mostly over long tool-result strings. These
// helpers find the end of a value by looking only at brackets and quotes,
// with strings.IndexByte (vectorised) across string contents, and decode only
// what the caller reads.
//
// They are meant for JSON already validated (a request a codec's ParseRequest
// accepted, a reply that passed Valid, bodies built from those). On
// malformed input they stop early or give odd results, never panic or loop.

// SkipString returns the offset just past the string whose opening quote is
// at s[i], or -1 when it is not terminated.
func SkipString(s string, i int) int {
	j := i + 1
	for {
		q := strings.IndexByte(s[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		// The quote is escaped when an odd number of backslashes precede it.
		bs := 0
		for k := j - 1; k > i && s[k] == '\\'; k-- {
			bs++
		}
		j++
		if bs%2 == 0 {
			return j
		}
	}
}

// SkipValue returns the offset just past the value starting at s[i] (no
// leading whitespace), or -1 when there is none.
func SkipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return SkipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				if j = SkipString(s, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// Number or literal: up to the next delimiter.
	j := i
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return j
}

func SkipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// ValueAt returns the gjson result for the value raw found at offset off of
// a container whose own offset in the document is base. Containers are not
// decoded (gjson decodes them lazily on Get/ForEach); scalars are, strings
// by StringValue.
func ValueAt(raw string, base, off int) gjson.Result {
	var r gjson.Result
	switch raw[0] {
	case '{', '[':
		r = gjson.Result{Type: gjson.JSON, Raw: raw}
	case '"':
		r = gjson.Result{Type: gjson.String, Raw: raw, Str: StringValue(raw)}
	default:
		r = gjson.Parse(raw)
	}
	r.Index = base + off
	return r
}

// EachElement calls fn with each element of arr and its position, stopping
// when fn returns false. It does nothing unless arr is an array (gjson's
// ForEach would visit an object's members, or a scalar itself). Each
// element's Index is its offset in the document arr came from (as gjson
// computes it).
func EachElement(arr gjson.Result, fn func(i int, v gjson.Result) bool) {
	if !arr.IsArray() {
		return
	}
	s := arr.Raw
	j := strings.IndexByte(s, '[') + 1
	for n := 0; ; n++ {
		if j = SkipSpace(s, j); j >= len(s) || s[j] == ']' {
			return
		}
		end := SkipValue(s, j)
		if end < 0 {
			return
		}
		if !fn(n, ValueAt(s[j:end], arr.Index, j)) {
			return
		}
		if j = SkipSpace(s, end); j < len(s) && s[j] == ',' {
			j++
		}
	}
}

// EachMember calls fn with the decoded name of each member of the object
// starting at s[i] and the span of its value, in order, stopping when fn
// returns false or at the first malformed member.
func EachMember(s string, i int, fn func(key string, start, end int) bool) {
	j := i + 1
	for {
		if j = SkipSpace(s, j); j >= len(s) || s[j] != '"' {
			return
		}
		kend := SkipString(s, j)
		if kend < 0 {
			return
		}
		key := s[j+1 : kend-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = gjson.Parse(s[j:kend]).Str
		}
		if j = SkipSpace(s, kend); j >= len(s) || s[j] != ':' {
			return
		}
		j = SkipSpace(s, j+1)
		end := SkipValue(s, j)
		if end < 0 || !fn(key, j, end) {
			return
		}
		if j = SkipSpace(s, end); j >= len(s) || s[j] != ',' {
			return // the closing brace, or malformed
		}
		j++
	}
}

// Members fills out[i] with the member of obj named keys[i] (the first one
// when a key repeats), in one pass over obj that decodes only those values.
func Members(obj gjson.Result, keys []string, out []gjson.Result) {
	members(obj, keys, out, ValueAt)
}

// MembersRaw is Members for a caller that reads only the Raw, Type and
// Index of string values: their Str is left empty (not decoded).
func MembersRaw(obj gjson.Result, keys []string, out []gjson.Result) {
	members(obj, keys, out, rawValueAt)
}

// StringOf is the value of a string result, read with its string decoded
// (Members) or not (MembersRaw: decoded here, without allocating when it
// has no escapes); "" for any other type.
func StringOf(r gjson.Result) string {
	switch {
	case r.Type != gjson.String:
		return ""
	case r.Str != "":
		return r.Str
	}
	return StringValue(r.Raw)
}

// rawValueAt is ValueAt without decoding a string.
func rawValueAt(raw string, base, off int) gjson.Result {
	if raw[0] == '"' {
		return gjson.Result{Type: gjson.String, Raw: raw, Index: base + off}
	}
	return ValueAt(raw, base, off)
}

func members(obj gjson.Result, keys []string, out []gjson.Result, at func(raw string, base, off int) gjson.Result) {
	if !obj.IsObject() {
		return
	}
	s := obj.Raw
	left := len(keys)
	EachMember(s, strings.IndexByte(s, '{'), func(key string, start, end int) bool {
		for i, k := range keys {
			if !out[i].Exists() && k == key {
				out[i] = at(s[start:end], obj.Index, start)
				left--
				break
			}
		}
		return left > 0
	})
}

// NestedMember returns obj.outer.inner, Member(Member(obj, outer), inner),
// reading outer's value only up to inner: the members of obj before outer
// are skipped, and outer's value is never measured, so a long definition
// after inner costs nothing.
func NestedMember(obj gjson.Result, outer, inner string) gjson.Result {
	if !obj.IsObject() {
		return gjson.Result{}
	}
	s := obj.Raw
	at := memberStart(s, strings.IndexByte(s, '{'), outer)
	if at < 0 || s[at] != '{' {
		return gjson.Result{}
	}
	var out gjson.Result
	EachMember(s, at, func(key string, start, end int) bool {
		if key != inner {
			return true
		}
		out = ValueAt(s[start:end], obj.Index, start)
		return false
	})
	return out
}

// memberStart is where the value of the first member named key of the
// object starting at s[i] starts (-1: none), the values before it skipped
// as EachMember does.
func memberStart(s string, i int, key string) int {
	j := i + 1
	for {
		if j = SkipSpace(s, j); j >= len(s) || s[j] != '"' {
			return -1
		}
		kend := SkipString(s, j)
		if kend < 0 {
			return -1
		}
		k := s[j+1 : kend-1]
		if strings.IndexByte(k, '\\') >= 0 {
			k = gjson.Parse(s[j:kend]).Str
		}
		if j = SkipSpace(s, kend); j >= len(s) || s[j] != ':' {
			return -1
		}
		if j = SkipSpace(s, j+1); j < len(s) && k == key {
			return j
		}
		end := SkipValue(s, j)
		if end < 0 {
			return -1
		}
		if j = SkipSpace(s, end); j >= len(s) || s[j] != ',' {
			return -1
		}
		j++
	}
}

// Member returns obj's first member named key (gjson's Get for a plain key,
// without decoding the members before it).
func Member(obj gjson.Result, key string) gjson.Result {
	var out [1]gjson.Result
	Members(obj, []string{key}, out[:])
	return out[0]
}
