package mock

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// The mock writes every payload by hand with append calls: no reflection, no
// map iteration, so the bytes are deterministic and cheap to produce.

// appendStrOrNull appends s as a JSON string, or null when s is empty.
func appendStrOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonkit.AppendString(b, s)
}

func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// field appends `"name":` preceded by a comma unless it opens an object.
func key(b []byte, name string) []byte {
	if n := len(b); n > 0 && b[n-1] != '{' && b[n-1] != '[' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// compactObject returns args as compact JSON suitable for embedding as an
// object value; empty or invalid input yields "{}".
func compactObject(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(args)); err != nil {
		return "{}"
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return "{}"
	}
	return buf.String()
}

// split cuts s into pieces of at most n runes each. An empty s yields nil.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 0 || len(s) <= n { // len in bytes ≥ runes: one piece suffices
		return []string{s}
	}
	out := make([]string, 0, len(s)/n+1)
	for len(s) > 0 {
		i, runes := 0, 0
		for i < len(s) && runes < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			runes++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

const lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor " +
	"incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud " +
	"exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure " +
	"dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. " +
	"Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt " +
	"mollit anim id est laborum.\n"

var loremCache sync.Map // int -> string

// loremText returns exactly n bytes of ASCII lorem ipsum (cached per size).
func loremText(n int) string {
	if n <= 0 {
		return ""
	}
	if v, ok := loremCache.Load(n); ok {
		return v.(string)
	}
	s := strings.Repeat(lorem, n/len(lorem)+1)[:n]
	loremCache.Store(n, s)
	return s
}
