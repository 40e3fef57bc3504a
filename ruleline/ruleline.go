// Package ruleline is the one-line rule syntax shared by routing rules and
// format rules: a leading name, then key=value pairs. It imports nothing of
// the project.
package ruleline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Fields splits a rule line into its leading name and its key=value pairs,
// in order. A value runs to the next blank, or is a Go quoted string: a
// double-quoted one with escapes (text="Answer in one sentence.") or a
// back-quoted raw one, for a regular expression with blanks or
// backslashes kept as they are (match=`(?i)\bgive me\b`). A key given
// twice is an error.
func Fields(line string) (name string, kv map[string]string, order []string, err error) {
	s := strings.TrimSpace(line)
	if s == "" {
		return "", nil, nil, errors.New("is empty")
	}
	name, s = cut(s)
	if strings.Contains(name, "=") {
		return "", nil, nil, fmt.Errorf("%q: must start with a name", line)
	}
	kv = map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		eq := strings.IndexByte(s, '=')
		sp := strings.IndexAny(s, " \t")
		if eq <= 0 || (sp >= 0 && sp < eq) {
			tok, _ := cut(s)
			return "", nil, nil, fmt.Errorf("%q is not key=value", tok)
		}
		key := s[:eq]
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "`") {
			q, qerr := strconv.QuotedPrefix(s)
			if qerr != nil {
				return "", nil, nil, fmt.Errorf("%s: unterminated or invalid quoted value", key)
			}
			val, _ = strconv.Unquote(q)
			s = s[len(q):]
			if s != "" && s[0] != ' ' && s[0] != '\t' {
				return "", nil, nil, fmt.Errorf("%s: text after the quoted value", key)
			}
		} else {
			val, s = cut(s)
		}
		if _, dup := kv[key]; dup {
			return "", nil, nil, fmt.Errorf("%s is given twice", key)
		}
		kv[key] = val
		order = append(order, key)
	}
	return name, kv, order, nil
}

// cut returns the first blank-separated token of s and the rest.
func cut(s string) (string, string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// ValidName reports whether a rule or upstream name is usable as a metric label and a
// log field: letters, digits, - _ . only, at most 64.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}
