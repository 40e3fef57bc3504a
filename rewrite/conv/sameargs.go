package conv

import "bytes"

// SameArgs reports whether two JSON argument texts are equal the way
// Anchors compares them (canonicalJSON): key order, whitespace, string
// escapes and number spelling do not matter. Texts that are not valid JSON
// are compared byte for byte.
func SameArgs(a, b []byte) bool {
	return bytes.Equal(canonicalJSON(a), canonicalJSON(b))
}
