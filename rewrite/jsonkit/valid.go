package jsonkit

import (
	"encoding/binary"
	"math/bits"
)

// Valid reports whether b is one valid JSON value (RFC 8259), with
// optional surrounding whitespace. It accepts exactly what encoding/json's
// Valid accepts (a fuzz test holds it to that), including invalid UTF-8
// inside strings, and rejects nesting deeper than 10000 levels as
// encoding/json does.
//
// It replaces gjson.ValidBytes on the request path, where validating an
// agent's 50 KB body was the largest single cost: string contents, most of
// such a body, are scanned eight bytes at a time for the three bytes that
// matter ('"', '\\' and control characters).
func Valid(b []byte) bool {
	v := validator{b: b}
	v.ws()
	if !v.value(0) {
		return false
	}
	v.ws()
	return v.i == len(b)
}

const maxValidDepth = 10000

type validator struct {
	b []byte
	i int
	// idx, when set, records the root object's members and the elements
	// of its array members (ValidIndexed).
	idx *Index
}

func (v *validator) ws() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '"':
		return v.str()
	case c == '{':
		return v.container(depth+1, '}')
	case c == '[':
		return v.container(depth+1, ']')
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	case c == 't':
		return v.lit("true")
	case c == 'f':
		return v.lit("false")
	case c == 'n':
		return v.lit("null")
	}
	return false
}

func (v *validator) lit(s string) bool {
	if len(v.b)-v.i < len(s) || string(v.b[v.i:v.i+len(s)]) != s {
		return false
	}
	v.i += len(s)
	return true
}

// container reads the members of an object (close '}': "key": value) or the
// elements of an array (close ']') after the opening byte at v.i.
func (v *validator) container(depth int, close byte) bool {
	if depth > maxValidDepth {
		return false
	}
	v.i++ // '{' or '['
	v.ws()
	if v.i < len(v.b) && v.b[v.i] == close {
		v.i++
		return true
	}
	return v.items(depth, close)
}

// items reads the members or elements of a container from the first one
// (at v.i, after any whitespace) to the closing byte.
func (v *validator) items(depth int, close byte) bool {
	for {
		if close == '}' {
			keyStart := v.i
			if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
				return false
			}
			if v.idx != nil && depth == 1 {
				v.idx.key(keyStart+1, v.i-1)
			}
			v.ws()
			if v.i >= len(v.b) || v.b[v.i] != ':' {
				return false
			}
			v.i++
			v.ws()
		}
		start := v.i
		if !v.value(depth) {
			return false
		}
		if v.idx != nil && depth <= 2 {
			v.idx.note(depth, close, start, v.i)
		}
		if more, ok := v.next(close); !more {
			return ok
		}
	}
}

// next reads what follows a member or element: a comma (more: another
// one follows) or the closing byte (ok). Anything else is invalid.
func (v *validator) next(close byte) (more, ok bool) {
	v.ws()
	if v.i >= len(v.b) {
		return false, false
	}
	switch v.b[v.i] {
	case ',':
		v.i++
		v.ws()
		return true, true
	case close:
		v.i++
		return false, true
	}
	return false, false
}

// rest reads the rest of a container after one of its members or
// elements, v.i just past it.
func (v *validator) rest(depth int, close byte) bool {
	if more, ok := v.next(close); !more {
		return ok
	}
	return v.items(depth, close)
}

// SWAR constants: a byte-wise "has a byte below 0x20", "has a quote", "has
// a backslash" test on eight bytes at once.
const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// special returns a mask with the high bit set in each byte of w that is
// '"', '\\' or below 0x20 (bytes >= 0x80 never set it). The low set bit
// marks the first such byte.
func special(w uint64) uint64 {
	quote := w ^ (swarOnes * '"')
	slash := w ^ (swarOnes * '\\')
	// zero-byte tests; exact for the lowest match, which is all we use.
	hasQuote := (quote - swarOnes) &^ quote
	hasSlash := (slash - swarOnes) &^ slash
	hasCtl := (w - swarOnes*0x20) &^ w
	return (hasQuote | hasSlash | hasCtl) & swarHighs
}

func (v *validator) str() bool {
	b := v.b
	i := v.i + 1 // after the opening quote
	for {
		// Skip plain bytes eight at a time.
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) {
			c := b[i]
			if c == '"' {
				v.i = i + 1
				return true
			}
			if c < 0x20 {
				return false
			}
			if c != '\\' {
				i++
				if i+8 <= len(b) {
					break // back to the word loop
				}
				continue
			}
			i++
			if i >= len(b) {
				return false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return false
				}
				i += 4
			default:
				return false
			}
			i++
		}
		if i >= len(b) {
			return false
		}
	}
}

func isHex(h byte) bool {
	return h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F'
}

func (v *validator) number() bool {
	b := v.b
	if b[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(b) && b[v.i] == '0':
		v.i++
	case v.i < len(b) && b[v.i] >= '1' && b[v.i] <= '9':
		for v.i < len(b) && b[v.i] >= '0' && b[v.i] <= '9' {
			v.i++
		}
	default:
		return false
	}
	if v.i < len(b) && b[v.i] == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if v.i < len(b) && (b[v.i] == 'e' || b[v.i] == 'E') {
		v.i++
		if v.i < len(b) && (b[v.i] == '+' || b[v.i] == '-') {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}

func (v *validator) digits() bool {
	start := v.i
	for v.i < len(v.b) && v.b[v.i] >= '0' && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i > start
}
