package jsonkit

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Helpers for the hand-written slot codecs that keep a list read from a
// store as its JSON until it is read (the turn engine's cache-integrity
// turns, intents' audit, topics' chapters).

// DecodeDocument decodes data, a JSON object, member by member with fn as
// DecodeObject does (keys: the struct's field names); false when data is
// not valid JSON, not an object, or fn or DecodeObject refuses it.
func DecodeDocument(data []byte, keys []string, fn func(key, v string) bool) bool {
	if !Valid(data) {
		return false
	}
	v := gjson.Parse(UnsafeString(data)).Raw
	if v == "" || v[0] != '{' {
		return false
	}
	_, ok := DecodeObject(v, keys, fn)
	return ok
}

// HasElements reports whether v, a valid JSON value, is an array with at
// least one element: a list worth keeping as stored.
func HasElements(v string) bool {
	if v == "" || v[0] != '[' {
		return false
	}
	rest := SkipSpace(v, 1)
	return rest < len(v) && v[rest] != ']'
}

// DecodeStoredArray decodes a stored JSON array as encoding/json would
// decode it into a []T: element by element with one, or, where one does
// not handle the array exactly so, with encoding/json itself.
func DecodeStoredArray[T any](v string, one func(v string, e *T) bool) ([]T, error) {
	var out []T
	if v != "" && DecodeArray(v, &out, one) {
		return out, nil
	}
	out = nil
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, err
	}
	return out, nil
}
