package jsonkit

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMembersReplaced: the index MembersReplaced derives for a body with
// some root members' values replaced locates every member exactly as
// indexing the new body from scratch does, and the elements of every
// member not replaced too.
func TestMembersReplaced(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := []string{"model", "messages", "system", "tools", "max_tokens", `k\u0065y`}
	values := []string{`"m"`, `[{"a":1}, {"b":[2,3]} ,"x"]`, `"sys \"q\""`, `[]`, `1024`, `{"n":null}`, `[ 1 ]`, `"longer value here"`}
	for trial := range 500 {
		var b strings.Builder
		b.WriteString("{ ")
		vals := make([]string, len(keys))
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			vals[i] = values[rng.IntN(len(values))]
			fmt.Fprintf(&b, "%q:%s", k, vals[i])
		}
		b.WriteString(" }")
		body := []byte(strings.ReplaceAll(b.String(), `"k\\u0065y"`, `"k\u0065y"`))
		idx, ok := ValidIndexed(body)
		if !ok {
			t.Fatalf("invalid test body %s", body)
		}
		// Replace a random set of members with values of the same kind.
		var repl []Replaced
		out := body
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				continue
			}
			dk := k
			if strings.Contains(k, `\`) {
				dk = "key"
			}
			cur := memberValue(t, out, dk)
			nv := values[rng.IntN(len(values))]
			if (nv[0] == '[') != (cur[0] == '[') {
				continue
			}
			s, e := valueSpan(t, out, dk)
			out = append(append(append([]byte(nil), out[:s]...), nv...), out[e:]...)
			repl = append(repl, Replaced{Key: dk, Len: len(nv)})
		}
		got := idx.MembersReplaced(out, repl)
		want, ok := ValidIndexed(out)
		if !ok || got == nil {
			t.Fatalf("trial %d: %s: got %v", trial, out, got)
		}
		if len(got.members) != len(want.members) {
			t.Fatalf("trial %d: %d members, want %d", trial, len(got.members), len(want.members))
		}
		for i := range want.members {
			g, w := got.members[i], want.members[i]
			if g.key != w.key || g.keyAt != w.keyAt || g.start != w.start || g.end != w.end || g.isArray != w.isArray {
				t.Fatalf("trial %d member %d: got %+v want %+v in %s", trial, i, g, w, out)
			}
			if g.elems != nil && fmt.Sprint(g.elems) != fmt.Sprint(w.elems) {
				t.Fatalf("trial %d member %d elements: got %v want %v", trial, i, g.elems, w.elems)
			}
		}
		if !got.Covers(out) || len(repl) > 0 && got.Covers(body) {
			t.Fatalf("trial %d: Covers wrong", trial)
		}
	}
}

// valueSpan is where the value of root member key lies in body, by a
// fresh index.
func valueSpan(t *testing.T, body []byte, key string) (int, int) {
	t.Helper()
	idx, ok := ValidIndexed(body)
	if !ok {
		t.Fatalf("invalid %s", body)
	}
	s, e, ok := idx.MemberSpan(key)
	if !ok {
		t.Fatalf("no %s in %s", key, body)
	}
	return s, e
}

// memberValue is the value of root member key in body.
func memberValue(t *testing.T, body []byte, key string) string {
	s, e := valueSpan(t, body, key)
	return string(body[s:e])
}
