package recognize

import (
	"unicode/utf8"
	"unsafe"
)

// jsonScanner is an incremental scanner over the JSON text of a call's
// arguments: it finds the top-level members whose keys it wants and hands
// their string values, decoded, to a sink, byte by byte or in runs, as the
// text arrives in fragments of any size. Every other value is skipped
// (nested ones included) without being kept. It never allocates; a
// fragment costs O(len(fragment)).
//
// It stops (dead) at the first byte that cannot continue a JSON object;
// the caller then falls back to the complete arguments.
type jsonScanner struct {
	keys  []string // the wanted keys
	match []int    // per key: bytes of the current key matched, -1 when it differs
	state scanState
	str   strDecoder
	// cur is the wanted key whose value is being decoded (-1: none); depth
	// and inStr, esc track a skipped nested value.
	cur   int
	depth int
	inStr bool
	esc   bool
	// done marks the keys whose value was seen (the first occurrence
	// counts, as for gjson).
	done uint64
}

type scanState uint8

const (
	sBeforeObj  scanState = iota // before the opening brace
	sKeyOrEnd                    // expecting a key or the closing brace
	sKey                         // inside a key
	sColon                       // after a key
	sValue                       // expecting a value
	sWantedStr                   // inside a wanted string value
	sSkipStr                     // inside a skipped string value
	sSkipNested                  // inside a skipped object or array
	sSkipScalar                  // inside a skipped number, true, false or null
	sAfterValue                  // after a value
	sEnd                         // after the closing brace
	sDead                        // not a JSON object
)

// scanSink receives the values of wanted keys.
type scanSink interface {
	// start starts the value of wanted key k, whose first byte is c; for a
	// string (c is '"'), it returns whether to decode it (text and end
	// follow) or skip it.
	start(k int, c byte) bool
	// text continues it with decoded bytes.
	text(k int, s string)
	// end ends it.
	end(k int)
}

func newJSONScanner(keys []string) jsonScanner {
	return jsonScanner{keys: keys, match: make([]int, len(keys)), cur: -1}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed scans the next fragment.
func (j *jsonScanner) feed(s string, sink scanSink) {
	for i := 0; i < len(s); {
		c := s[i]
		switch j.state {
		case sBeforeObj:
			i++
			if c == '{' {
				j.state = sKeyOrEnd
			} else if !isSpace(c) {
				j.state = sDead
			}
		case sKeyOrEnd:
			i++
			switch {
			case c == '"':
				j.state = sKey
				j.str = strDecoder{}
				for k := range j.match {
					j.match[k] = 0
				}
			case c == '}':
				j.state = sEnd
			case !isSpace(c):
				j.state = sDead
			}
		case sKey:
			n, closed := j.str.decode(s[i:], j)
			i += n
			if closed {
				j.cur = -1
				for k, m := range j.match {
					if m == len(j.keys[k]) && j.done&(1<<k) == 0 {
						j.cur = k
						break
					}
				}
				j.state = sColon
			}
		case sColon:
			i++
			if c == ':' {
				j.state = sValue
			} else if !isSpace(c) {
				j.state = sDead
			}
		case sValue:
			i++
			if isSpace(c) {
				continue
			}
			decode := false
			if j.cur >= 0 {
				j.done |= 1 << j.cur // the first occurrence counts, string or not
				decode = sink.start(j.cur, c)
			}
			switch {
			case c == '"' && decode:
				j.state = sWantedStr
				j.str = strDecoder{}
			case c == '"':
				j.state, j.esc = sSkipStr, false
			case c == '{' || c == '[':
				j.state, j.depth, j.inStr, j.esc = sSkipNested, 1, false, false
			default:
				j.state = sSkipScalar
			}
		case sWantedStr:
			n, closed := j.str.decodeTo(s[i:], j.cur, sink)
			i += n
			if closed {
				sink.end(j.cur)
				j.cur = -1
				j.state = sAfterValue
			}
		case sSkipStr:
			i += j.skipString(s[i:])
		case sSkipNested:
			i += j.skipNested(s[i:])
		case sSkipScalar:
			switch {
			case c == ',':
				j.state = sKeyOrEnd
			case c == '}':
				j.state = sEnd
			case isSpace(c):
				j.state = sAfterValue
			}
			i++
		case sAfterValue:
			i++
			switch {
			case c == ',':
				j.state = sKeyOrEnd
			case c == '}':
				j.state = sEnd
			case !isSpace(c):
				j.state = sDead
			}
		default: // sEnd, sDead: nothing more to find
			return
		}
	}
}

// keyText advances the key matchers (strDecoder's output while in a key).
func (j *jsonScanner) keyText(s string) {
	for k, m := range j.match {
		if m < 0 {
			continue
		}
		key := j.keys[k]
		if len(key)-m >= len(s) && key[m:m+len(s)] == s {
			j.match[k] = m + len(s)
		} else {
			j.match[k] = -1
		}
	}
}

// skipString skips a string value's bytes up to and including its closing
// quote; it returns the bytes consumed.
func (j *jsonScanner) skipString(s string) int {
	i := 0
	if j.esc {
		j.esc = false
		i++
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
			if i == len(s) {
				j.esc = true
				return len(s)
			}
		case '"':
			j.state = sAfterValue
			return i + 1
		}
	}
	return len(s)
}

// skipNested skips an object or array value, strings within included.
func (j *jsonScanner) skipNested(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case j.esc:
			j.esc = false
		case j.inStr:
			switch c {
			case '\\':
				j.esc = true
			case '"':
				j.inStr = false
			}
		case c == '"':
			j.inStr = true
		case c == '{' || c == '[':
			j.depth++
		case c == '}' || c == ']':
			j.depth--
			if j.depth == 0 {
				j.state = sAfterValue
				return i + 1
			}
		}
	}
	return len(s)
}

// strDecoder decodes the inside of a JSON string incrementally: escapes,
// \uXXXX and surrogate pairs split across fragments. An invalid escape
// or a lone surrogate decodes to U+FFFD, as encoding/json does.
type strDecoder struct {
	esc  bool // after a backslash
	hexN int8 // hex digits of \u still to read (0: none)
	hex  rune
	// hi is a high surrogate waiting for its low half.
	hi      rune
	pending bool // hi is set
	buf     [utf8.UTFMax]byte
}

// decode decodes into the key matchers of j.
func (d *strDecoder) decode(s string, j *jsonScanner) (int, bool) {
	return d.run(s, func(t string) { j.keyText(t) })
}

// decodeTo decodes into sink for key k.
func (d *strDecoder) decodeTo(s string, k int, sink scanSink) (int, bool) {
	return d.run(s, func(t string) { sink.text(k, t) })
}

// run decodes s up to the closing quote; it returns the bytes consumed and
// whether the string closed. out receives decoded text in runs.
func (d *strDecoder) run(s string, out func(string)) (int, bool) {
	i := 0
	for i < len(s) {
		switch {
		case d.hexN > 0:
			v, ok := hexVal(s[i])
			i++
			if !ok { // a broken \u: what was read is replaced
				d.hexN = 0
				d.flushHi(out)
				d.emitRune(utf8.RuneError, out)
				i-- // the byte is read again as text
				continue
			}
			d.hex = d.hex<<4 | v
			d.hexN--
			if d.hexN == 0 {
				d.unicode(d.hex, out)
			}
		case d.esc:
			d.esc = false
			c := s[i]
			i++
			if c == 'u' {
				d.hexN, d.hex = 4, 0
				continue
			}
			d.flushHi(out)
			switch c {
			case 'n':
				out("\n")
			case 't':
				out("\t")
			case 'r':
				out("\r")
			case 'b':
				out("\b")
			case 'f':
				out("\f")
			case '"':
				out(`"`)
			case '\\':
				out(`\`)
			case '/':
				out("/")
			default:
				d.emitRune(utf8.RuneError, out)
			}
		default:
			// A run of plain bytes up to the next quote or backslash.
			k := i
			for k < len(s) && s[k] != '"' && s[k] != '\\' {
				k++
			}
			if k > i {
				d.flushHi(out)
				out(s[i:k])
			}
			if k == len(s) {
				return k, false
			}
			i = k + 1
			if s[k] == '"' {
				d.flushHi(out)
				return i, true
			}
			d.esc = true
		}
	}
	return i, false
}

func (d *strDecoder) unicode(r rune, out func(string)) {
	switch {
	case r >= 0xD800 && r < 0xDC00:
		d.flushHi(out)
		d.hi, d.pending = r, true
	case r >= 0xDC00 && r < 0xE000 && d.pending:
		d.pending = false
		d.emitRune(0x10000+(d.hi-0xD800)<<10+(r-0xDC00), out)
	default:
		d.flushHi(out)
		if r >= 0xD800 && r < 0xE000 {
			r = utf8.RuneError
		}
		d.emitRune(r, out)
	}
}

// flushHi emits a high surrogate that no low half followed.
func (d *strDecoder) flushHi(out func(string)) {
	if d.pending {
		d.pending = false
		d.emitRune(utf8.RuneError, out)
	}
}

func (d *strDecoder) emitRune(r rune, out func(string)) {
	n := utf8.EncodeRune(d.buf[:], r)
	out(unsafeString(d.buf[:n]))
}

func hexVal(c byte) (rune, bool) {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0'), true
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

// unsafeString views b as a string without copying; the string is valid
// only until b changes (sinks copy what they keep).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
