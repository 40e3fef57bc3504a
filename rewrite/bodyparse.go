package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds how codecs read bodies: validation that reports errors
// wrapping ErrMalformed or ErrMalformedReply, field type checks that name
// the offending field, and small text helpers shared by the codecs.

// ParseIndexed validates a request body and indexes its top level. The
// error wraps ErrMalformed when the body is not valid JSON, not an object,
// or repeats a top-level key (duplicateKeyError).
func ParseIndexed(body []byte) (gjson.Result, *jsonkit.Index, error) {
	b, err := ParseBody(nil, body, "")
	if err != nil {
		return gjson.Result{}, nil, err
	}
	return b.Root, b.Idx, nil
}

// ParseTrustedRoot returns the top-level object of a request body that is
// known to be valid JSON (ParseRequest accepted it, or a codec built it from
// one), without validating it again: the turn engine edits the same 50 KB
// body several times per request, and validation was a third of that work.
// Invalid input never panics; it gives an error or a garbled result.
func ParseTrustedRoot(body []byte) (gjson.Result, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return gjson.Result{}, fmt.Errorf("%w: body must be a JSON object", ErrMalformed)
	}
	return root, nil
}

// The errors of ParseReplyRoot, made once: it runs for every event of a
// stream, deep in a streamed turn's stack, where a formatted error's
// temporaries would count towards every stream's stack size.
var (
	errReplyNotJSON   = fmt.Errorf("%w: not valid JSON", ErrMalformedReply)
	errReplyNotObject = fmt.Errorf("%w: not a JSON object", ErrMalformedReply)
)

// ParseReplyRoot validates a reply body or event payload and returns its
// top-level object.
func ParseReplyRoot(body []byte) (gjson.Result, error) {
	if !jsonkit.Valid(body) {
		return gjson.Result{}, errReplyNotJSON
	}
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return gjson.Result{}, errReplyNotObject
	}
	return root, nil
}

// Field type checks. Each returns nil when r is absent or null, and an error
// wrapping ErrMalformed naming field when r has another type.

// WantString returns nil when r is absent, null or a string, else a TypeError
// naming field (wrapping ErrMalformed).
func WantString(r gjson.Result, field string) error {
	if jsonkit.IsNull(r) || r.Type == gjson.String {
		return nil
	}
	return TypeError(field, "a string")
}

// WantBool returns nil when r is absent, null or a boolean, else a TypeError
// naming field (wrapping ErrMalformed).
func WantBool(r gjson.Result, field string) error {
	if jsonkit.IsNull(r) || r.Type == gjson.True || r.Type == gjson.False {
		return nil
	}
	return TypeError(field, "a boolean")
}

// WantNumber returns nil when r is absent, null or a number, else a TypeError
// naming field (wrapping ErrMalformed).
func WantNumber(r gjson.Result, field string) error {
	if jsonkit.IsNull(r) || r.Type == gjson.Number {
		return nil
	}
	return TypeError(field, "a number")
}

// WantArray returns nil when r is absent, null or an array, else a TypeError
// naming field (wrapping ErrMalformed).
func WantArray(r gjson.Result, field string) error {
	if jsonkit.IsNull(r) || r.IsArray() {
		return nil
	}
	return TypeError(field, "an array")
}

// WantObject returns nil when r is absent, null or an object, else a TypeError
// naming field (wrapping ErrMalformed).
func WantObject(r gjson.Result, field string) error {
	if jsonkit.IsNull(r) || r.IsObject() {
		return nil
	}
	return TypeError(field, "an object")
}

// WantStringOrArray accepts the string-or-blocks shape of message content.
func WantStringOrArray(r gjson.Result, field string) error {
	if jsonkit.IsNull(r) || r.Type == gjson.String || r.IsArray() {
		return nil
	}
	return TypeError(field, "a string or an array")
}

// fieldError is a malformed-body error naming the offending field. Parsers
// create it with a name relative to what they parse and callers prefix
// their own member name or element index as it propagates (at, AtIndex), so
// field names are only formatted when a body is rejected.
type fieldError struct{ field, want string }

func (e *fieldError) Error() string {
	return ErrMalformed.Error() + ": " + e.field + " must be " + e.want
}

func (e *fieldError) Unwrap() error { return ErrMalformed }

// TypeError reports that field must be want ("a string", "an object", ...).
// field is "" for the value being parsed itself.
func TypeError(field, want string) error { return &fieldError{field: field, want: want} }

// AtField prefixes a field error with the member name it was found under; other
// errors, and nil, pass through.
func AtField(err error, name string) error {
	if fe, ok := err.(*fieldError); ok {
		fe.field = joinField(name, fe.field)
	}
	return err
}

// AtIndex prefixes a field error with the array index it was found at.
func AtIndex(err error, i int) error {
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

// JoinTexts joins texts with a blank line, the separator every codec uses
// SideIf it appends to existing prose.
func JoinTexts(texts []string) string { return strings.Join(texts, "\n\n") }

// SuffixText returns what to append to existing prose orig: each text with a
// blank line before it (none before the first when orig is empty). Only
// whether orig is empty matters: a string's raw content will do.
func SuffixText(orig string, texts []string) string {
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
	if !jsonkit.Valid(p) || !gjson.ParseBytes(p).IsObject() {
		return nil, fmt.Errorf("rewrite: parameters of tool %q are not a JSON object", name)
	}
	return p, nil
}
