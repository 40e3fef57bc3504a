package jsonkit

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// This file holds the byte-level helpers every codec uses: aliasing-free
// reads from gjson results and splices that edit a body without touching the
// bytes around the edit.

// UnsafeString views b as a string without copying. The string aliases b: it must not
// outlive b or be used after b is modified. gjson results taken from it alias
// b too; values stored in views go through OwnedString or OwnedRaw, which copy.
func UnsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// OwnedString returns the string value of r as a string that does not alias the
// parsed bytes. Non-string results give "".
func OwnedString(r gjson.Result) string {
	if r.Type != gjson.String {
		return ""
	}
	if strings.IndexByte(r.Raw, '\\') >= 0 {
		return r.Str // gjson unescaped it into a fresh string
	}
	return strings.Clone(r.Str)
}

// OwnedRaw returns a copy of r's raw JSON, or nil when r does not exist.
func OwnedRaw(r gjson.Result) []byte {
	if r.Raw == "" {
		return nil
	}
	return []byte(r.Raw)
}

// IsNull reports whether r is absent or JSON null, which every codec treats
// alike for optional fields.
func IsNull(r gjson.Result) bool { return !r.Exists() || r.Type == gjson.Null }

// RootObject returns the top-level object of a body already checked with
// gjson.Valid, with Raw exactly covering the object and Index its offset, so
// that Index of every result reached from it by Get or ForEach is an offset
// into the body. ok is false when the top-level value is not an object.
func RootObject(s string) (gjson.Result, bool) {
	i := 0
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	j := len(s) - 1
	for j > i && s[j] <= ' ' {
		j--
	}
	if i >= len(s) || s[i] != '{' || s[j] != '}' {
		return gjson.Result{}, false
	}
	return gjson.Result{Type: gjson.JSON, Raw: s[i : j+1], Index: i}, true
}

// Splice returns a new slice: body with body[start:end] replaced by the
// concatenation of ins. body itself is never modified.
func Splice(body []byte, start, end int, ins ...[]byte) []byte {
	n := len(body) - (end - start)
	for _, b := range ins {
		n += len(b)
	}
	out := make([]byte, 0, n)
	out = append(out, body[:start]...)
	for _, b := range ins {
		out = append(out, b...)
	}
	return append(out, body[end:]...)
}

// ValueEnd returns the offset just past r's raw value in the body.
func ValueEnd(r gjson.Result) int { return r.Index + len(r.Raw) }

// LastValueEnd returns the offset just past the last element of array or the
// last member value of an object, or -1 when it is empty.
func LastValueEnd(container gjson.Result) int {
	s := container.Raw
	if container.Type != gjson.JSON || len(s) < 2 {
		return -1
	}
	// The last value ends at the last non-space byte before the closing
	// bracket, unless that byte is the opening one (an empty container).
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	i := len(s) - 1
	for i > 0 && isSpace(s[i]) {
		i-- // the closing bracket
	}
	i--
	for i >= 0 && isSpace(s[i]) {
		i--
	}
	if i < 0 || s[i] == '[' || s[i] == '{' {
		return -1 // no value ends in an opening bracket: the container is empty
	}
	return container.Index + i + 1
}

// AppendElements returns body with items (raw JSON values) appended to the array
// arr, which must have been read from body. The new elements follow the last
// existing element directly; whitespace around existing elements is kept.
func AppendElements(body []byte, arr gjson.Result, items []byte) []byte {
	if pos := LastValueEnd(arr); pos >= 0 {
		return Splice(body, pos, pos, []byte{','}, items)
	}
	pos := arr.Index + 1 // just after '['
	return Splice(body, pos, pos, items)
}

// PrependElement returns body with item inserted as the first element of arr.
func PrependElement(body []byte, arr gjson.Result, item []byte) []byte {
	pos := arr.Index + 1
	if LastValueEnd(arr) >= 0 {
		return Splice(body, pos, pos, item, []byte{','})
	}
	return Splice(body, pos, pos, item)
}

// SetMember returns body with obj's member key set to the raw JSON value
// raw: an existing member's value is replaced in place; a new member is added
// after the last one (so a closing brace on its own line stays there).
func SetMember(body []byte, obj gjson.Result, key string, raw []byte) []byte {
	if found := Member(obj, key); found.Exists() {
		return Splice(body, found.Index, ValueEnd(found), raw)
	}
	member := AppendString(nil, key)
	member = append(member, ':')
	if pos := LastValueEnd(obj); pos >= 0 {
		return Splice(body, pos, pos, []byte{','}, member, raw)
	}
	pos := obj.Index + 1
	return Splice(body, pos, pos, member, raw)
}

// AppendToString returns body with text appended inside the JSON string s,
// leaving the existing escaped content byte-identical.
func AppendToString(body []byte, s gjson.Result, text string) []byte {
	pos := ValueEnd(s) - 1 // the closing quote
	esc := AppendString(nil, text)
	return Splice(body, pos, pos, esc[1:len(esc)-1])
}

// AppendString appends s to dst as a JSON string literal. Invalid UTF-8
// becomes U+FFFD; HTML characters are not escaped. The output is stable for
// a given input.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Quote returns s as a JSON string literal.
func Quote(s string) []byte { return AppendString(nil, s) }

// UnsafeBytes views s as a byte slice without copying; it must not be modified.
func UnsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
