package jsonkit

import (
	"encoding/json"
	"strings"

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

// TakeStored decodes a list a codec kept as stored (*stored, a JSON array;
// "" when the list is not stored) into *list with DecodeStoredArray, and
// empties *stored; nothing changes on an error.
func TakeStored[T any](stored *string, list *[]T, one func(v string, e *T) bool) error {
	if *stored == "" {
		return nil
	}
	out, err := DecodeStoredArray(*stored, one)
	if err != nil {
		return err
	}
	*list, *stored = out, ""
	return nil
}

// AppendStoredArray returns the stored JSON array raw with only its last
// keep elements (keep < 0: all of them, not scanned), followed by n new
// elements, the i-th written by one: how a codec adds to a list it keeps
// as stored. An error from one is returned as it is.
func AppendStoredArray(raw string, keep, n int, one func(dst []byte, i int) ([]byte, error)) (string, error) {
	dst := make([]byte, 0, len(raw)+160*n)
	sep := false
	if keep < 0 {
		dst = append(dst, raw[:strings.LastIndexByte(raw, ']')]...)
		sep = HasElements(raw)
	} else {
		dst = append(dst, '[')
		if keep > 0 {
			elems := ElementsOf(nil, gjson.Parse(raw))
			for _, e := range elems[max(0, len(elems)-keep):] {
				if sep {
					dst = append(dst, ',')
				}
				dst, sep = append(dst, e.Raw...), true
			}
		}
	}
	for i := range n {
		if sep {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = one(dst, i); err != nil {
			return "", err
		}
		sep = true
	}
	return string(append(dst, ']')), nil
}
