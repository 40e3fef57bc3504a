// Package ruleline is the rule syntax the configuration's rule lists
// share: one-line rules of routing and format (a leading name, then
// key=value pairs: Fields) and "pattern=value" lists such as
// recovery.strategy and budgets.tool_calls (Pairs). It imports nothing of
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

// Pairs reads list entries of the form "<pattern>=<value>" (blanks around
// either side trimmed) in order, building each with build. An entry
// without "=" or with an empty pattern, and one build refuses, is bad:
// the error lists every bad entry, quoted, with shape naming the form
// expected ("model-glob=value") or build's reason.
func Pairs[T any](entries []string, shape string, build func(pattern, value string) (T, error)) ([]T, error) {
	out := make([]T, 0, len(entries))
	var bad []string
	for _, e := range entries {
		pat, v, ok := strings.Cut(e, "=")
		pat, v = strings.TrimSpace(pat), strings.TrimSpace(v)
		if !ok || pat == "" {
			bad = append(bad, fmt.Sprintf("%q is not %s", e, shape))
			continue
		}
		r, err := build(pat, v)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", e, err))
			continue
		}
		out = append(out, r)
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "; "))
	}
	return out, nil
}
