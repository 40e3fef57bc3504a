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
	// starts holds where the current member or element of the open
	// containers at depth 1 and 2 began, for idx.
	starts [3]int
	// depth counts the containers open in scan: the closing byte of each
	// of the first 256 is a bit of arrays (set: ']'), of the rest an
	// element of deep.
	depth  int
	arrays [4]uint64
	deep   []byte
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

// value reads one value at v.i, inside depth enclosing containers.
func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch v.b[v.i] {
	case '{', '[':
		return v.scan(depth, 0, false)
	}
	return v.scalar()
}

// scalar reads a string, number or literal at v.i.
func (v *validator) scalar() bool {
	switch c := v.b[v.i]; {
	case c == '"':
		return v.str()
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

// scan reads containers without recursion, so that validating a deeply
// nested value (a tool call's arguments in a Gemini chunk, read under a
// streamed turn's whole reading chain) takes no more stack than a flat
// one. With after false it reads the container whose opening byte is at
// v.i, inside depth enclosing ones. With after true it reads the rest of
// the open container at depth (close: its closing byte) from just past
// one of its members or elements. It returns once that container closed.
//
// The containers opened meanwhile are kept on v's stack of open
// containers (push, pop). With an index (v.idx), the root object's keys
// and the members and elements of the containers at depth 1 and 2 are
// noted as they end, as the recursive reading noted them.
func (v *validator) scan(depth int, close byte, after bool) bool {
	base := v.depth
	if after {
		v.push(close)
	}
	for {
		if after {
			more, ok := v.next(close)
			if !ok {
				return false
			}
			if !more {
				// The container closed: it was an item of the one outside.
				v.pop()
				if v.depth == base {
					return true
				}
				depth--
				close = v.top()
				if v.idx != nil {
					v.noteItem(depth, close)
				}
				continue
			}
		} else {
			// An opening byte at v.i.
			if depth++; depth > maxValidDepth {
				return false
			}
			close = '}'
			if v.b[v.i] == '[' {
				close = ']'
			}
			v.push(close)
			v.i++
			v.ws()
			if v.i < len(v.b) && v.b[v.i] == close {
				after = true // empty: next reads the closing byte
				continue
			}
		}
		// A member's key (close '}') and value, or an element: a scalar
		// is read here, a container's opening byte left for the next
		// step, which notes the item once it closes.
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
		if v.i >= len(v.b) {
			return false
		}
		if v.idx != nil && depth < len(v.starts) {
			v.starts[depth] = v.i
		}
		if c := v.b[v.i]; c == '{' || c == '[' {
			after = false
			continue
		}
		if !v.scalar() {
			return false
		}
		if v.idx != nil {
			v.noteItem(depth, close)
		}
		after = true
	}
}

// noteItem notes in v.idx the member or element of the open container at
// depth that ends at v.i.
func (v *validator) noteItem(depth int, close byte) {
	if depth < len(v.starts) {
		v.idx.note(depth, close, v.starts[depth], v.i)
	}
}

// push opens a container whose closing byte is close. The first
// len(v.arrays)*64 levels are bits in v (no allocation); deeper ones, up
// to maxValidDepth, go to v.deep.
func (v *validator) push(close byte) {
	if n := v.depth; n < 64*len(v.arrays) {
		bit := uint64(1) << (n % 64)
		if close == ']' {
			v.arrays[n/64] |= bit
		} else {
			v.arrays[n/64] &^= bit
		}
	} else {
		v.deep = append(v.deep, close)
	}
	v.depth++
}

// pop closes the innermost open container.
func (v *validator) pop() {
	v.depth--
	if v.depth >= 64*len(v.arrays) {
		v.deep = v.deep[:len(v.deep)-1]
	}
}

// top is the innermost open container's closing byte.
func (v *validator) top() byte {
	n := v.depth - 1
	if n >= 64*len(v.arrays) {
		return v.deep[len(v.deep)-1]
	}
	if v.arrays[n/64]&(1<<(n%64)) != 0 {
		return ']'
	}
	return '}'
}

// next reads what follows a member or element: a comma (more: another
// one follows, whitespace after it read too) or the closing byte; ok is
// false for anything else.
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

// rest reads the rest of the open container at depth (closing byte
// close) after one of its members or elements, v.i just past it.
func (v *validator) rest(depth int, close byte) bool {
	return v.scan(depth, close, true)
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
