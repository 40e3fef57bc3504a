package jsonkit

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// StringValue returns the value of the JSON string literal raw (quotes
// included): its content itself, aliasing raw, when it holds no escape;
// otherwise a new string with the escapes decoded as encoding/json
// decodes them (\uXXXX pairs joined into one rune, a lone surrogate
// becoming U+FFFD). The unescaped runs between escapes are copied whole
// (gjson decodes byte by byte: a 1.5 KB reply text with a few newlines
// cost ~4 µs there). raw must be a valid literal (it is for validated
// JSON); on a malformed escape the rest is kept as it is.
func StringValue(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	s := raw[1 : len(raw)-1]
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i >= 0 {
		out = append(out, s[:i]...)
		s = s[i:]
		n := 2
		if len(s) < 2 {
			break
		}
		switch c := s[1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[2:])
			if !ok {
				n = 0
				break
			}
			n = 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
					r2, ok2 = hex4(s[8:])
				}
				if d := utf16.DecodeRune(r, r2); ok2 && d != utf8.RuneError {
					r, n = d, 12
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			n = 0
		}
		if n == 0 { // malformed: keep the rest as it is
			break
		}
		s = s[n:]
		i = strings.IndexByte(s, '\\')
	}
	return string(append(out, s...))
}

// hex4 decodes the four hex digits s starts with.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
