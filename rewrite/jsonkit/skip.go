package jsonkit

import (
	"strconv"
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

// ValueAtRaw is ValueAt for a caller that reads a number by its Raw: the
// number is not parsed (Num stays 0), which also keeps strconv's float
// parser, and the stack it takes, out of the call.
//
// Literals are typed here as well, without gjson's parser (its frame is
// large): true, false and null as gjson types them.
func ValueAtRaw(raw string, base, off int) gjson.Result {
	r := gjson.Result{Raw: raw, Index: base + off}
	switch c := raw[0]; {
	case c == '-' || c >= '0' && c <= '9':
		r.Type = gjson.Number
	case c == '{' || c == '[':
		r.Type = gjson.JSON
	case c == '"':
		r.Type, r.Str = gjson.String, StringValue(raw)
	case raw == "true":
		r.Type = gjson.True
	case raw == "false":
		r.Type = gjson.False
	case raw == "null":
		r.Type = gjson.Null
	default:
		return ValueAt(raw, base, off)
	}
	return r
}

// Num is the value of a number result whose Num ValueAtRaw left unparsed:
// an integer literal is read as one (strconv.ParseInt takes little stack),
// any other by strconv.ParseFloat, as gjson reads it. It is 0 for a
// result that is not a number.
func Num(r gjson.Result) float64 {
	if r.Type != gjson.Number {
		return 0
	}
	if i, err := strconv.ParseInt(r.Raw, 10, 64); err == nil && i >= -1<<53 && i <= 1<<53 {
		return float64(i)
	}
	f, _ := strconv.ParseFloat(r.Raw, 64)
	return f
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
		start, end, next, ok := NextElement(s, j)
		if !ok || !fn(n, ValueAt(s[start:end], arr.Index, start)) {
			return
		}
		j = next
	}
}

// ElementsOf appends arr's elements to dst (none unless arr is an
// array), each with its offset in the document arr came from as Index:
// EachElement's elements, collected without a callback, into a slice the
// caller may reuse.
func ElementsOf(dst []gjson.Result, arr gjson.Result) []gjson.Result {
	if !arr.IsArray() {
		return dst
	}
	s := arr.Raw
	for j := strings.IndexByte(s, '[') + 1; ; {
		start, end, next, ok := NextElement(s, j)
		if !ok {
			return dst
		}
		dst = append(dst, ValueAt(s[start:end], arr.Index, start))
		j = next
	}
}

// FirstElement is arr's first element (gjson's Get("0")); none, with no
// offset, when arr is not an array or is empty.
func FirstElement(arr gjson.Result) gjson.Result {
	if !arr.IsArray() {
		return gjson.Result{}
	}
	s := arr.Raw
	start, end, _, ok := NextElement(s, strings.IndexByte(s, '[')+1)
	if !ok {
		return gjson.Result{}
	}
	return ValueAt(s[start:end], arr.Index, start)
}

// NextElement reads the element of an array that starts at s[j] (just past
// the opening bracket or a comma; whitespace allowed): the span of its
// value and where to look for the next one. ok is false at the closing
// bracket or on malformed input. It is EachElement's step, for a loop that
// must not pay for a callback (NextMember).
func NextElement(s string, j int) (start, end, next int, ok bool) {
	if j = SkipSpace(s, j); j >= len(s) || s[j] == ']' {
		return 0, 0, j, false
	}
	if end = SkipValue(s, j); end < 0 {
		return 0, 0, j, false
	}
	if next = SkipSpace(s, end); next < len(s) && s[next] == ',' {
		next++
	}
	return j, end, next, true
}

// EachMember calls fn with the decoded name of each member of the object
// starting at s[i] and the span of its value, in order, stopping when fn
// returns false or at the first malformed member.
func EachMember(s string, i int, fn func(key string, start, end int) bool) {
	for j := i + 1; j >= 0; {
		key, start, end, next, ok := NextMember(s, j)
		if !ok || !fn(key, start, end) {
			return
		}
		j = next
	}
}

// NextMember reads the member of an object that starts at s[j] (just past
// the opening brace or a comma; whitespace allowed): its decoded name, the
// span of its value, and where the member after it starts (just past the
// comma; -1 when none follows: the closing brace, or malformed input). ok
// is false when no well-formed member starts at j. It is EachMember's step,
// for a loop that must not pay for a callback (a closure's frame sits on
// the stack under whatever the loop's body calls).
func NextMember(s string, j int) (key string, start, end, next int, ok bool) {
	if key, start, ok = memberKey(s, j); !ok {
		return "", 0, 0, -1, false
	}
	if end = SkipValue(s, start); end < 0 {
		return "", 0, 0, -1, false
	}
	return key, start, end, memberAfter(s, end), true
}

// memberKey reads the name of the member that starts at s[j] (whitespace
// allowed) and where its value starts; ok is false when no well-formed
// name and colon start there. The name is decoded when it has escapes.
func memberKey(s string, j int) (key string, value int, ok bool) {
	if j = SkipSpace(s, j); j >= len(s) || s[j] != '"' {
		return "", 0, false
	}
	kend := SkipString(s, j)
	if kend < 0 {
		return "", 0, false
	}
	key = s[j+1 : kend-1]
	if strings.IndexByte(key, '\\') >= 0 {
		key = gjson.Parse(s[j:kend]).Str
	}
	if j = SkipSpace(s, kend); j >= len(s) || s[j] != ':' {
		return "", 0, false
	}
	return key, SkipSpace(s, j+1), true
}

// memberAfter is where the member after the value that ends at s[end]
// starts (just past the comma); -1 when none follows.
func memberAfter(s string, end int) int {
	if k := SkipSpace(s, end); k < len(s) && s[k] == ',' {
		return k + 1
	}
	return -1
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
	for j := i + 1; j >= 0; {
		k, start, ok := memberKey(s, j)
		if !ok {
			return -1
		}
		if k == key && start < len(s) {
			return start
		}
		end := SkipValue(s, start)
		if end < 0 {
			return -1
		}
		j = memberAfter(s, end)
	}
	return -1
}

// MemberRaw is the raw text of the first member named key of the object
// obj (JSON text; Member's Raw), "" when it has none or obj is not an
// object. It builds no gjson.Result, for the checks that only look at a
// value's first byte, in the least stack.
func MemberRaw(obj, key string) string {
	i := strings.IndexByte(obj, '{')
	if i < 0 || strings.TrimSpace(obj[:i]) != "" {
		return ""
	}
	at, end := memberValueSpan(obj, i, key)
	if at < 0 {
		return ""
	}
	return obj[at:end]
}

// memberValueSpan is where the value of the first member named key of the
// object whose opening brace is s[i] starts and ends; at is -1 when it has
// none (or the object is malformed before it).
func memberValueSpan(s string, i int, key string) (at, end int) {
	if at = memberStart(s, i, key); at < 0 {
		return -1, -1
	}
	if end = SkipValue(s, at); end < 0 {
		return -1, -1
	}
	return at, end
}

// Member returns obj's first member named key (gjson's Get for a plain key,
// without decoding the members before it). It runs in little stack (no
// callback, no path parsing), which matters where it runs under a streamed
// turn's reading chain (turn.Turn.Run).
func Member(obj gjson.Result, key string) gjson.Result {
	if !obj.IsObject() {
		return gjson.Result{}
	}
	s := obj.Raw
	at, end := memberValueSpan(s, strings.IndexByte(s, '{'), key)
	if at < 0 {
		return gjson.Result{}
	}
	return ValueAt(s[at:end], obj.Index, at)
}

// LeadingElements fills out with the first elements (raw text) of the
// array that is the value of the root object's member named key, found by
// skipping the members before it, not by validating them: s may be
// anything, and what is found is only as good as a guess until s is
// validated. n is how many were found; more reports whether another
// element follows the last of them (without reading it). n is 0 when s is
// not an object with such a member, the array is empty, or the members
// before it do not end before byte within (no byte past within is skipped).
func LeadingElements(s, key string, within int, out []string) (n int, more bool) {
	head := s[:min(within, len(s))]
	j := SkipSpace(head, 0)
	if j >= len(head) || head[j] != '{' {
		return 0, false
	}
	for j++; ; {
		k, v, ok := memberKey(s, j)
		if !ok {
			return 0, false
		}
		if k == key {
			return leadingElements(s, v, out)
		}
		end := SkipValue(head, v)
		if end < 0 || end >= len(head) {
			return 0, false
		}
		if j = memberAfter(head, end); j < 0 {
			return 0, false
		}
	}
}

// leadingElements is LeadingElements for the array starting at s[i].
func leadingElements(s string, i int, out []string) (n int, more bool) {
	if i >= len(s) || s[i] != '[' {
		return 0, false
	}
	j := i + 1
	for n < len(out) {
		if j = SkipSpace(s, j); j >= len(s) || s[j] == ']' {
			return n, false
		}
		end := SkipValue(s, j)
		if end < 0 {
			return n, false
		}
		out[n], n = s[j:end], n+1
		k := SkipSpace(s, end)
		if k >= len(s) || s[k] != ',' {
			return n, false
		}
		j = k + 1
	}
	return n, true
}
