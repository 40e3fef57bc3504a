package rewrite

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// This file holds the byte-level JSON helpers every codec uses: aliasing-free
// reads from gjson results and splices that edit a body without touching the
// bytes around the edit.

// bstr views b as a string without copying. The string aliases b: it must not
// outlive b or be used after b is modified. gjson results taken from it alias
// b too; values stored in views go through str or rawBytes, which copy.
func bstr(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// str returns the string value of r as a string that does not alias the
// parsed bytes. Non-string results give "".
func str(r gjson.Result) string {
	if r.Type != gjson.String {
		return ""
	}
	if strings.IndexByte(r.Raw, '\\') >= 0 {
		return r.Str // gjson unescaped it into a fresh string
	}
	return strings.Clone(r.Str)
}

// rawBytes returns a copy of r's raw JSON, or nil when r does not exist.
func rawBytes(r gjson.Result) []byte {
	if r.Raw == "" {
		return nil
	}
	return []byte(r.Raw)
}

// isNull reports whether r is absent or JSON null, which every codec treats
// alike for optional fields.
func isNull(r gjson.Result) bool { return !r.Exists() || r.Type == gjson.Null }

// rootObject returns the top-level object of a body already checked with
// gjson.Valid, with Raw exactly covering the object and Index its offset, so
// that Index of every result reached from it by Get or ForEach is an offset
// into the body. ok is false when the top-level value is not an object.
func rootObject(s string) (gjson.Result, bool) {
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

// parseRoot validates a request body and returns its top-level object.
func parseRoot(body []byte) (gjson.Result, error) {
	if !validJSON(body) {
		return gjson.Result{}, fmt.Errorf("%w: body is not valid JSON", ErrMalformed)
	}
	root, ok := rootObject(bstr(body))
	if !ok {
		return gjson.Result{}, fmt.Errorf("%w: body must be a JSON object", ErrMalformed)
	}
	return root, nil
}

// parseTrustedRoot returns the top-level object of a request body that is
// known to be valid JSON (ParseRequest accepted it, or a codec built it from
// one), without validating it again: the turn engine edits the same 50 KB
// body several times per request, and validation was a third of that work.
// Invalid input never panics; it gives an error or a garbled result.
func parseTrustedRoot(body []byte) (gjson.Result, error) {
	root, ok := rootObject(bstr(body))
	if !ok {
		return gjson.Result{}, fmt.Errorf("%w: body must be a JSON object", ErrMalformed)
	}
	return root, nil
}

// parseReplyRoot validates a reply body or event payload and returns its
// top-level object.
func parseReplyRoot(body []byte) (gjson.Result, error) {
	if !validJSON(body) {
		return gjson.Result{}, fmt.Errorf("%w: not valid JSON", ErrMalformedReply)
	}
	root, ok := rootObject(bstr(body))
	if !ok {
		return gjson.Result{}, fmt.Errorf("%w: not a JSON object", ErrMalformedReply)
	}
	return root, nil
}

// Field type checks. Each returns nil when r is absent or null, and an error
// wrapping ErrMalformed naming field when r has another type.

func wantString(r gjson.Result, field string) error {
	if isNull(r) || r.Type == gjson.String {
		return nil
	}
	return typeErr(field, "a string")
}

func wantBool(r gjson.Result, field string) error {
	if isNull(r) || r.Type == gjson.True || r.Type == gjson.False {
		return nil
	}
	return typeErr(field, "a boolean")
}

func wantNumber(r gjson.Result, field string) error {
	if isNull(r) || r.Type == gjson.Number {
		return nil
	}
	return typeErr(field, "a number")
}

func wantArray(r gjson.Result, field string) error {
	if isNull(r) || r.IsArray() {
		return nil
	}
	return typeErr(field, "an array")
}

func wantObject(r gjson.Result, field string) error {
	if isNull(r) || r.IsObject() {
		return nil
	}
	return typeErr(field, "an object")
}

// wantStringOrArray accepts the string-or-blocks shape of message content.
func wantStringOrArray(r gjson.Result, field string) error {
	if isNull(r) || r.Type == gjson.String || r.IsArray() {
		return nil
	}
	return typeErr(field, "a string or an array")
}

// fieldError is a malformed-body error naming the offending field. Parsers
// create it with a name relative to what they parse and callers prefix
// their own member name or element index as it propagates (at, atIndex), so
// field names are only formatted when a body is rejected.
type fieldError struct{ field, want string }

func (e *fieldError) Error() string {
	return ErrMalformed.Error() + ": " + e.field + " must be " + e.want
}

func (e *fieldError) Unwrap() error { return ErrMalformed }

// typeErr reports that field must be want ("a string", "an object", ...).
// field is "" for the value being parsed itself.
func typeErr(field, want string) error { return &fieldError{field: field, want: want} }

// at prefixes a field error with the member name it was found under; other
// errors, and nil, pass through.
func at(err error, name string) error {
	if fe, ok := err.(*fieldError); ok {
		fe.field = joinField(name, fe.field)
	}
	return err
}

// atIndex prefixes a field error with the array index it was found at.
func atIndex(err error, i int) error {
	if fe, ok := err.(*fieldError); ok {
		fe.field = joinField("["+strconv.Itoa(i)+"]", fe.field)
	}
	return err
}

func joinField(prefix, field string) string {
	switch {
	case field == "":
		return prefix
	case field[0] == '[':
		return prefix + field
	}
	return prefix + "." + field
}

// splice returns a new slice: body with body[start:end] replaced by the
// concatenation of ins. body itself is never modified.
func splice(body []byte, start, end int, ins ...[]byte) []byte {
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

// end returns the offset just past r's raw value in the body.
func end(r gjson.Result) int { return r.Index + len(r.Raw) }

// lastElemEnd returns the offset just past the last element of array or the
// last member value of an object, or -1 when it is empty.
func lastElemEnd(container gjson.Result) int {
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

// appendItems returns body with items (raw JSON values) appended to the array
// arr, which must have been read from body. The new elements follow the last
// existing element directly; whitespace around existing elements is kept.
func appendItems(body []byte, arr gjson.Result, items []byte) []byte {
	if pos := lastElemEnd(arr); pos >= 0 {
		return splice(body, pos, pos, []byte{','}, items)
	}
	pos := arr.Index + 1 // just after '['
	return splice(body, pos, pos, items)
}

// prependItem returns body with item inserted as the first element of arr.
func prependItem(body []byte, arr gjson.Result, item []byte) []byte {
	pos := arr.Index + 1
	if lastElemEnd(arr) >= 0 {
		return splice(body, pos, pos, item, []byte{','})
	}
	return splice(body, pos, pos, item)
}

// setMember returns body with obj's member key set to the raw JSON value
// raw: an existing member's value is replaced in place; a new member is added
// after the last one (so a closing brace on its own line stays there).
func setMember(body []byte, obj gjson.Result, key string, raw []byte) []byte {
	if found := member(obj, key); found.Exists() {
		return splice(body, found.Index, end(found), raw)
	}
	member := appendJSONString(nil, key)
	member = append(member, ':')
	if pos := lastElemEnd(obj); pos >= 0 {
		return splice(body, pos, pos, []byte{','}, member, raw)
	}
	pos := obj.Index + 1
	return splice(body, pos, pos, member, raw)
}

// appendToString returns body with text appended inside the JSON string s,
// leaving the existing escaped content byte-identical.
func appendToString(body []byte, s gjson.Result, text string) []byte {
	pos := end(s) - 1 // the closing quote
	esc := appendJSONString(nil, text)
	return splice(body, pos, pos, esc[1:len(esc)-1])
}

// appendJSONString appends s to dst as a JSON string literal. Invalid UTF-8
// becomes U+FFFD; HTML characters are not escaped. The output is stable for
// a given input.
func appendJSONString(dst []byte, s string) []byte {
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

// jsonString returns s as a JSON string literal.
func jsonString(s string) []byte { return appendJSONString(nil, s) }

// joinTexts joins texts with a blank line, the separator every codec uses
// when it appends to existing prose.
func joinTexts(texts []string) string { return strings.Join(texts, "\n\n") }

// suffixText returns what to append to existing prose orig: each text with a
// blank line before it (none before the first when orig is empty).
func suffixText(orig string, texts []string) string {
	var b strings.Builder
	for i, t := range texts {
		if i > 0 || orig != "" {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	return b.String()
}

// toolParams returns a tool's parameter schema, defaulting to an empty object
// schema, or an error when the hook gave invalid JSON.
func toolParams(name string, p []byte) ([]byte, error) {
	if len(p) == 0 {
		return []byte(`{"type":"object","properties":{}}`), nil
	}
	if !validJSON(p) || !gjson.ParseBytes(p).IsObject() {
		return nil, fmt.Errorf("rewrite: parameters of tool %q are not a JSON object", name)
	}
	return p, nil
}
