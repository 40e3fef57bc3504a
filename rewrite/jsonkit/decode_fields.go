package jsonkit

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Field decoders for hand-written decoders that must read exactly what
// encoding/json reads into a field of the same Go type (the session
// record, the turn engine's prefix slot). Each takes one raw JSON value of
// a document already validated (Valid), sets *dst as encoding/json would
// (a JSON null leaves it as it is) and reports false for anything it does
// not handle exactly that way: a value of another type, a string that is
// not valid UTF-8 (encoding/json replaces its bytes). On false the caller
// decodes the document with encoding/json instead.

// DecodeString decodes a string field.
func DecodeString(v string, dst *string) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
	default:
		return false
	}
	if !utf8.ValidString(v) {
		return false // encoding/json replaces invalid bytes
	}
	*dst = strings.Clone(StringValue(v))
	return true
}

// DecodeInt decodes an int or int64 field (out of its range fails, as
// encoding/json's does).
func DecodeInt[T int | int64](v string, dst *T) bool {
	if v == "null" {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 8*int(unsafe.Sizeof(*dst)))
	if err != nil {
		return false
	}
	*dst = T(n)
	return true
}

// DecodeFloat decodes a float64 field.
func DecodeFloat(v string, dst *float64) bool {
	if v == "null" {
		return true
	}
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// DecodeTime decodes a time.Time field (time.Time's UnmarshalJSON).
func DecodeTime(v string, dst *time.Time) bool {
	if v == "null" {
		return true
	}
	if v[0] != '"' || strings.IndexByte(v, '\\') >= 0 {
		return false
	}
	var t time.Time
	if t.UnmarshalJSON(UnsafeBytes(v)) != nil {
		return false
	}
	*dst = t
	return true
}

// DecodeObject calls fn with each member of the object v; null is no
// object and no error. Anything else fails, as do a key that repeats
// (encoding/json merges some repeated values) and, when keys (a struct's
// field names) is given, a key that matches one of them only
// case-insensitively.
func DecodeObject(v string, keys []string, fn func(key, v string) bool) (isNull, ok bool) {
	if v == "null" {
		return true, true
	}
	if v[0] != '{' {
		return false, false
	}
	ok = true
	var seenStack [16]string
	seen := seenStack[:0]
	EachMember(v, 0, func(key string, start, end int) bool {
		if slices.Contains(seen, key) || keys != nil && !slices.Contains(keys, key) && foldsToField(key, keys) {
			ok = false
			return false
		}
		seen = append(seen, key)
		ok = fn(key, v[start:end])
		return ok
	})
	return false, ok
}

// foldsToField reports whether key is not one of keys but matches one
// case-insensitively, as encoding/json matches field names: the fast
// decoder leaves such a record to it.
func foldsToField(key string, keys []string) bool {
	for _, k := range keys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// DecodeUint decodes an unsigned integer field of bits bits (32, 64).
func DecodeUint(v string, bits int, dst *uint64) bool {
	if v == "null" {
		return true
	}
	n, err := strconv.ParseUint(v, 10, bits)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// DecodeBool decodes a bool field.
func DecodeBool(v string, dst *bool) bool {
	switch v {
	case "null":
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return false
	}
	return true
}

// DecodeArray decodes a slice field: each element by one (a null element
// is the zero value, as one leaves it), null a nil slice.
func DecodeArray[T any](v string, dst *[]T, one func(v string, e *T) bool) bool {
	switch v[0] {
	case 'n':
		*dst = nil
		return true
	case '[':
	default:
		return false
	}
	out := []T{}
	ok := true
	EachElement(gjson.Result{Type: gjson.JSON, Raw: v}, func(_ int, el gjson.Result) bool {
		var e T
		ok = one(el.Raw, &e)
		out = append(out, e)
		return ok
	})
	if ok {
		*dst = out
	}
	return ok
}

// DecodeMap decodes a map[string]V field: each value by one, into a fresh
// map (encoding/json decodes into an empty field so), null a nil map.
// A null value fails: encoding/json stores a zero there, which one cannot
// tell from a value it decoded.
func DecodeMap[V any](v string, dst *map[string]V, one func(v string, e *V) bool) bool {
	out := map[string]V{}
	isNull, ok := DecodeObject(v, nil, func(key, v string) bool {
		var e V
		if v == "null" || !one(v, &e) {
			return false
		}
		out[key] = e
		return true
	})
	switch {
	case !ok:
		return false
	case isNull:
		*dst = nil
	default:
		*dst = out
	}
	return true
}
