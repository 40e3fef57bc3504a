package kit

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// PrefixBreak compares the conversations of two upstream requests of one
// session on driver d's API (the array at d.HistoryPath()): it returns -1
// when every element of prev is, byte for byte, the element at the same
// position of next (next extends prev: the model's view stayed
// append-only), otherwise the index of the first element that differs or
// that next lacks.
func PrefixBreak(d Driver, prev, next []byte) int {
	p := gjson.GetBytes(prev, d.HistoryPath()).Array()
	n := gjson.GetBytes(next, d.HistoryPath()).Array()
	for i := range p {
		if i >= len(n) || !bytes.Equal([]byte(p[i].Raw), []byte(n[i].Raw)) {
			return i
		}
	}
	return -1
}
