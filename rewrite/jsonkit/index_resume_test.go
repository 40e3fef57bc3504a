package jsonkit

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func sharedPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// checkResume holds ValidIndexedFrom to ValidIndexed on next, after prev.
func checkResume(t *testing.T, prev, next []byte) {
	t.Helper()
	pidx, ok := ValidIndexed(prev)
	if !ok {
		return
	}
	orig := pidx
	origCopy := copyIndex(orig)
	pidx = pidx.Rebase(append([]byte(nil), prev...))
	rebased := copyIndex(pidx)
	want, wok := ValidIndexed(next)
	got, gok := ValidIndexedFrom(next, pidx, sharedPrefix(prev, next))
	// The indexes share element spans: resuming changed neither.
	if !reflect.DeepEqual(copyIndex(pidx), rebased) || !reflect.DeepEqual(copyIndex(orig), origCopy) {
		t.Fatalf("resuming changed the index it resumed from\nprev %q\nnext %q", prev, next)
	}
	if gok != wok {
		t.Fatalf("ok %v, want %v\nprev %q\nnext %q", gok, wok, prev, next)
	}
	if wok && (got.body != want.body || !reflect.DeepEqual(got.members, want.members)) {
		t.Fatalf("index %+v, want %+v\nprev %q\nnext %q", got, want, prev, next)
	}
	// A member said unchanged is the earlier body's member, byte for byte.
	for i := 0; got != nil && i < len(got.members); i++ {
		if !got.Unchanged(i) {
			continue
		}
		g, p := &got.members[i], &pidx.members[i]
		if got.body[g.keyAt:g.end] != pidx.body[p.keyAt:p.end] {
			t.Fatalf("member %d said unchanged: %q, was %q", i, got.body[g.keyAt:g.end], pidx.body[p.keyAt:p.end])
		}
	}
}

// copyIndex is a deep copy of d's members, for comparing it later.
func copyIndex(d *Index) []memberSpan {
	out := make([]memberSpan, len(d.members))
	for i, ms := range d.members {
		ms.elems = append([]span(nil), ms.elems...)
		out[i] = ms
	}
	return out
}

func conversation(n int, tail string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","system":[{"type":"text","text":"be brief"}],"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":"turn %d \"q\" \\ \u00e9"}]}`, i)
	}
	b.WriteString("]" + tail + "}")
	return []byte(b.String())
}

// TestValidIndexedFrom: a body that grows, shrinks, is edited before,
// inside or after the shared part, or turns invalid gets the same answer
// and index as a whole validation.
func TestValidIndexedFrom(t *testing.T) {
	base := conversation(5, `,"stream":true`)
	if idx, _ := ValidIndexed(base); len(idx.members) != 4 || len(idx.members[1].elems) != 1 || len(idx.members[2].elems) != 5 {
		t.Fatalf("the index does not hold the arrays' elements: %+v", idx.members)
	}
	cases := map[string][]byte{
		"grown":             conversation(7, `,"stream":true`),
		"same":              conversation(5, `,"stream":true`),
		"shrunk":            conversation(3, `,"stream":true`),
		"tail member":       conversation(6, `,"stream":false,"metadata":{"user_id":"u"}`),
		"no tail member":    conversation(6, ``),
		"edited early":      []byte(strings.Replace(string(conversation(6, ``)), "turn 1", "turn X", 1)),
		"invalid new tail":  []byte(strings.TrimSuffix(string(conversation(6, ``)), "}") + `,"x":}`),
		"unclosed":          conversation(6, `,"stream":true`)[:len(conversation(6, `,"stream":true`))-1],
		"trailing garbage":  append(conversation(6, ``), " x"...),
		"empty array":       []byte(`{"model":"m","system":[{"type":"text","text":"be brief"}],"messages":[]}`),
		"element edited":    []byte(strings.Replace(string(conversation(6, ``)), `"turn 4`, `"turn 4!`, 1)),
		"element truncated": []byte(strings.Replace(string(conversation(6, ``)), `"turn 5 \"q\" \\ é"}]}`, `"turn 5`, 1)),
		"not an object":     []byte(`[1,2,3]`),
	}
	for name, next := range cases {
		t.Run(name, func(t *testing.T) { checkResume(t, base, next) })
	}
}

// agentBody is a Claude Code shaped body: the conversation of n turns
// first, then the members after it (tail: its system prompt and tools).
func agentBody(n int, tail string) []byte {
	c := string(conversation(n, ``))
	c = strings.Replace(c, `"system":[{"type":"text","text":"be brief"}],`, ``, 1)
	return []byte(strings.TrimSuffix(c, "}") + tail + "}")
}

const agentTail = `,"system":[{"type":"text","text":"be brief"},{"type":"text","text":"x\u00e9"}],` +
	`"tools":[{"name":"Read","input_schema":{"type":"object"}},{"name":"Bash"}],"metadata":{"user_id":"u"},"stream":true`

// TestValidIndexedFromTail: members after the conversation that are the
// previous body's, byte for byte, are taken from its index, moved; any
// change in them, or after them, is validated as before.
func TestValidIndexedFromTail(t *testing.T) {
	base := agentBody(5, agentTail)
	if idx, _ := ValidIndexed(base); len(idx.members) != 6 || len(idx.members[1].elems) != 5 || len(idx.members[3].elems) != 2 {
		t.Fatalf("unexpected index: %+v", idx.members)
	}
	edit := func(old, new string) []byte {
		return []byte(strings.Replace(string(agentBody(7, agentTail)), old, new, 1))
	}
	cases := map[string][]byte{
		"grown":                agentBody(7, agentTail),
		"same":                 agentBody(5, agentTail),
		"shrunk":               agentBody(3, agentTail),
		"tool renamed":         edit(`"Bash"`, `"Bish"`),
		"tool added":           edit(`{"name":"Bash"}`, `{"name":"Bash"},{"name":"Grep"}`),
		"tail member dropped":  edit(`,"stream":true`, ``),
		"tail made invalid":    edit(`"stream":true`, `"stream":tru`),
		"trailing space":       append(agentBody(7, agentTail), ' '),
		"trailing garbage":     append(agentBody(7, agentTail), " x"...),
		"duplicate tail key":   edit(`"stream":true`, `"stream":true,"model":"n"`),
		"no tail":              agentBody(7, ``),
		"escape in tail":       edit(`x\u00e9`, `x\u00e8`),
		"control char in tail": edit(`x\u00e9`, "x"),
	}
	for name, next := range cases {
		t.Run(name, func(t *testing.T) { checkResume(t, base, next) })
	}
	// The tail is read from the index, not validated: the resumed index is
	// still the whole validation's (checkResume), with the tail's spans
	// moved by the two turns added.
	prev, _ := ValidIndexed(base)
	next := agentBody(7, agentTail)
	got, ok := ValidIndexedFrom(next, prev.Rebase(append([]byte(nil), base...)), sharedPrefix(base, next))
	if !ok || got.members[3].start != prev.members[3].start+len(next)-len(base) {
		t.Fatalf("tools not moved: %+v", got.members)
	}
}

// FuzzValidIndexedFrom: for any two bodies, resuming after the first gives
// what validating the second whole gives.
func FuzzValidIndexedFrom(f *testing.F) {
	f.Add(conversation(3, ``), conversation(4, ``))
	f.Add(conversation(3, `,"a":[1,2]`), conversation(3, `,"a":[1,2,3]`))
	f.Add([]byte(`{"a":[1,2],"b":[3]}`), []byte(`{"a":[1,2],"b":[3,4]}`))
	f.Add([]byte(`{"a":[{"x":1},{"y":2}]}`), []byte(`{"a":[{"x":1},{"y":2},{"z":"\u0000"}]}`))
	f.Add(agentBody(3, agentTail), []byte(`,{"role":"user","content":"more"}`))
	f.Fuzz(func(t *testing.T, prev, next []byte) {
		checkResume(t, prev, next)
		// The common case: next extends prev's bytes.
		checkResume(t, prev, append(append([]byte(nil), prev...), next...))
		// Claude Code's: next inserted inside prev, whose end stays.
		if len(prev) > 0 {
			cut := int(uint(len(next)) % uint(len(prev)))
			mid := append(append(append([]byte(nil), prev[:cut]...), next...), prev[cut:]...)
			checkResume(t, prev, mid)
		}
	})
}

// MemberElems places the elements where AppendElements finds them, and
// answers ok exactly when it does.
func TestMemberElemsIsAppendElements(t *testing.T) {
	body := conversation(4, `,"tools":[],"stream":true,"n":[1, 2]`)
	idx, ok := ValidIndexed(body)
	if !ok {
		t.Fatal("fixture invalid")
	}
	for _, key := range []string{"messages", "system", "tools", "n", "stream", "model", "absent"} {
		elems, eok := idx.AppendElements(nil, key)
		es, ok := idx.MemberElems(key)
		if ok != eok || es.Len() != len(elems) {
			t.Fatalf("%s: ok %v len %d, AppendElements ok %v len %d", key, ok, es.Len(), eok, len(elems))
		}
		for i, el := range elems {
			if s, e := es.At(i); s != el.Index || e != el.Index+len(el.Raw) {
				t.Fatalf("%s[%d]: [%d,%d), AppendElements [%d,%d)", key, i, s, e, el.Index, el.Index+len(el.Raw))
			}
		}
	}
	var none *Index
	if _, ok := none.MemberElems("messages"); ok {
		t.Fatal("a nil index knows elements")
	}
}
