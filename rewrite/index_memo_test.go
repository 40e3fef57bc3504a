package rewrite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// parseMemo parses body through views' index memo keyed by windows of its
// bytes (no conversation named) and hands the entry back: the index, or
// the error.
func parseMemo(views *ViewCache, body []byte) (*jsonkit.Index, error) {
	b, err := ParseBody(views, body, "")
	if err != nil {
		return nil, err
	}
	b.Release()
	return b.Idx, nil
}

// memoConversation is a body above indexMemoMinBytes: a large system
// prompt, then n messages.
func memoConversation(n int, edit string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"model":"m","system":%q,"messages":[`, strings.Repeat("rules. ", indexMemoMinBytes/7))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		text := fmt.Sprintf("turn %d %s", i, strings.Repeat("x", 300))
		if i == 3 {
			text += edit
		}
		fmt.Fprintf(&b, `{"role":"user","content":%q}`, text)
	}
	b.WriteString(`],"stream":false}`)
	return []byte(b.String())
}

// TestIndexMemoSameAsWhole: through the memo, a conversation that grows,
// is edited early, turns invalid and recovers is indexed exactly as a
// whole validation does, though the caller reuses its buffer each time.
func TestIndexMemoSameAsWhole(t *testing.T) {
	views := NewViewCache(64 << 20)
	buf := make([]byte, 0, 1<<20)
	steps := []func() []byte{
		func() []byte { return memoConversation(10, "") },
		func() []byte { return memoConversation(11, "") },
		func() []byte { return memoConversation(12, "") },
		func() []byte { return memoConversation(12, " edited") },
		func() []byte { b := memoConversation(13, " edited"); return append(b[:len(b)-1], ',') },
		func() []byte { return memoConversation(13, " edited") },
		func() []byte { return memoConversation(5, "") }, // compacted: may key elsewhere
	}
	for i, step := range steps {
		if i == len(steps)-1 {
			if n := views.bodies.entries.Len(); n != 1 {
				t.Fatalf("memo holds %d entries, want the conversation's one", n)
			}
		}
		buf = append(buf[:0], step()...)
		got, gerr := parseMemo(views, buf)
		_, want, werr := ParseIndexed(append([]byte(nil), buf...))
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("step %d: error %v, want %v", i, gerr, werr)
		}
		if werr == nil && !got.SameSpans(want) {
			t.Fatalf("step %d: the memo's index differs from a whole validation", i)
		}
		for j := range buf {
			buf[j] = '!'
		}
	}
}

// TestIndexMemoWindowKeySessions: keyed by their bytes (memoWindowKey, the
// key of bodies without a conversation member), two bodies that share a
// system prompt longer than the default key prefixes of the past key
// apart once they are longer than what they share, and each keeps its key
// while it grows, until three quarters of it cross a power of two.
func TestIndexMemoWindowKeySessions(t *testing.T) {
	conv := func(agent string, turns int) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, `{"model":"m","system":%q,"messages":[`, strings.Repeat("shared rules. ", 40<<10/14))
		for i := range turns {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"role":"user","content":"%s turn %d %s"}`, agent, i, strings.Repeat("y", 1000))
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	a, b := conv("alpha", 100), conv("beta", 100)
	if memoWindowKey(a) == memoWindowKey(b) {
		t.Fatalf("two sessions sharing a %d-byte prompt share a key at %d bytes", 40<<10, len(a))
	}
	// The same conversation but for its first message (the same task
	// replayed), after a prompt shorter than the keyed prefix: apart too.
	// (With a longer prompt too, two such sessions would share a key: the
	// case the key does not cover, where only the bytes compared differ.)
	first := func(task string, turns int) []byte {
		c := string(conv("same", turns))
		c = strings.Replace(c, strings.Repeat("shared rules. ", 40<<10/14), strings.Repeat("shared rules. ", 8<<10/14), 1)
		return []byte(strings.Replace(c, `"same turn 0 `, `"`+task+` turn 0 `, 1))
	}
	if x, y := first("task A", 100), first("task B", 100); memoWindowKey(x) == memoWindowKey(y) {
		t.Fatal("two sessions differing only in their first message share a key")
	}
	same := 0
	for turns := 101; turns <= 140; turns++ {
		next := conv("alpha", turns)
		if memoKeyEnd(len(next)) == memoKeyEnd(len(a)) {
			if memoWindowKey(next) != memoWindowKey(a) {
				t.Fatalf("the key changed at %d turns, before a power of two", turns)
			}
			same++
		}
	}
	if same == 0 {
		t.Fatal("no growth kept the key")
	}
}

// TestIndexMemoBounded: least recently used out beyond the budget; a body
// above a quarter of the budget is not kept.
func TestIndexMemoBounded(t *testing.T) {
	m := newIndexMemo(4000)
	for k := range uint64(5) {
		m.put(&indexMemoEntry{key: k, body: make([]byte, 900)})
	}
	if used, budget := m.entries.Used(); used > budget || m.take(0) != nil || m.take(4) == nil {
		t.Fatalf("used %d of %d; oldest not evicted or newest lost", used, budget)
	}
	m.put(&indexMemoEntry{key: 9, body: make([]byte, 1001)})
	if m.take(9) != nil {
		t.Fatal("an entry above a quarter of the budget was kept")
	}
	if newIndexMemo(0) != nil {
		t.Fatal("a memo without budget")
	}
}

// TestIndexMemoWaysKeepCollidingConversations: conversations whose keyed
// bytes coincide (one long prompt, then the same first message and reply,
// then a different task)
// each resume from their own previous body, however they interleave, and
// the memo's indexes stay those of a whole validation.
func TestIndexMemoWaysKeepCollidingConversations(t *testing.T) {
	conv := func(task string, turns int) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, `{"model":"m","system":%q,"messages":[`, strings.Repeat("shared rules. ", 40<<10/14))
		for i := range turns {
			if i > 0 {
				b.WriteByte(',')
			}
			text := fmt.Sprintf("turn %d %s", i, strings.Repeat("y", 1000))
			if i == 2 {
				text = task + " " + text
			}
			fmt.Fprintf(&b, `{"role":"user","content":%q}`, text)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	tasks := []string{"task A", "task B", "task C"}
	if memoKey(conv(tasks[0], 30), "messages") != memoKey(conv(tasks[1], 30), "messages") {
		t.Fatal("the conversations do not collide: the test needs them to")
	}
	m := newIndexMemo(64 << 20)
	lastGen := map[string]uint64{}
	for turns := 30; turns < 36; turns++ {
		for _, task := range tasks {
			body := conv(task, turns)
			idx, ok, e := m.validIndexed(body, "messages")
			_, whole, werr := ParseIndexed(append([]byte(nil), body...))
			wok := werr == nil
			if !ok || !wok || e == nil || !idx.SameSpans(whole) {
				t.Fatalf("%s at %d turns: ok %v, entry %v, or an index unlike a whole validation", task, turns, ok, e != nil)
			}
			if g, seen := lastGen[task]; seen {
				if e.prevGen != g {
					t.Fatalf("%s at %d turns resumed from another conversation's body", task, turns)
				}
				if prevIdx, _ := jsonkit.ValidIndexed(conv(task, turns-1)); !continues(e.shared, conversationEnd(prevIdx, "messages")) {
					t.Fatalf("%s at %d turns shares only %d bytes with its previous body", task, turns, e.shared)
				}
			}
			lastGen[task] = e.gen
			m.put(e)
		}
	}
	if n := m.entries.Len(); n != len(tasks) {
		t.Fatalf("memo holds %d entries, want one per conversation (%d)", n, len(tasks))
	}
}

// TestIndexMemoContinuesBeforeTheTail: a conversation sent before members
// larger than itself (Claude Code sends its system prompt and tools, tens
// of KB, after the messages) is continued from one request to the next:
// each resumes from its own previous body in its own way and keeps the
// messages' views, so parsing the next request reads only its new turn.
func TestIndexMemoContinuesBeforeTheTail(t *testing.T) {
	tail := fmt.Sprintf(`,"system":%q,"tools":[{"name":"Read","description":%q}],"stream":true`,
		strings.Repeat("rules. ", 20<<10/7), strings.Repeat("reads. ", 60<<10/7))
	conv := func(task string, turns int) []byte {
		var b strings.Builder
		b.WriteString(`{"model":"m","messages":[`)
		for i := range turns {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"role":"user","content":%q}`, fmt.Sprintf("%s turn %d %s", task, i, strings.Repeat("y", 300)))
		}
		b.WriteString("]" + tail + "}")
		return []byte(b.String())
	}
	views := NewViewCache(64 << 20)
	lastGen := map[string]uint64{}
	for turns := 10; turns < 16; turns++ {
		for _, task := range []string{"task A", "task B"} {
			body := conv(task, turns)
			before := views.Reused()
			pb, err := ParseBody(views, body, "messages")
			if err != nil {
				t.Fatal(err)
			}
			var m [1]gjson.Result
			pb.Idx.Lookup([]string{"messages"}, m[:])
			if _, _, err := ParseMessages(pb, m[0], "messages", rawViews, rawMessage); err != nil {
				t.Fatal(err)
			}
			lin := pb.Lineage
			pb.Release()
			if g, seen := lastGen[task]; seen {
				if lin.Prev != g {
					t.Fatalf("%s at %d turns did not resume from its previous body: %+v, previous gen %d, %d bytes", task, turns, lin, g, len(body))
				}
				if got := views.Reused() - before; got < uint64(turns-2) {
					t.Fatalf("%s at %d turns reused %d earlier messages' views, want at least %d", task, turns, got, turns-2)
				}
			}
			lastGen[task] = lin.Gen
		}
	}
	if n := views.bodies.entries.Len(); n != 2 {
		t.Fatalf("memo holds %d entries, want one per conversation", n)
	}
	// Each conversation's first body was validated whole, every later one
	// resumed with its system prompt and tools taken from the index.
	if whole, resumed, tail := views.BodyStats(); whole != 2 || resumed != 0 || tail != 10 {
		t.Fatalf("bodies: %d whole, %d resumed, %d resumed with the tail kept; want 2, 0, 10", whole, resumed, tail)
	}
}

// TestIndexMemoKeyFollowsTheConversation: the key is the conversation's
// first elements, wherever the conversation lies. It stays while the
// conversation grows (from its third element on), with the members after
// it moving (Claude Code's order) or not; it tells apart sessions of one
// agent kind (their first messages differ) and sessions with the same task
// (their first replies differ).
func TestIndexMemoKeyFollowsTheConversation(t *testing.T) {
	system := fmt.Sprintf(`"system":%q`, strings.Repeat("shared rules. ", 40<<10/14))
	body := func(first bool, task, reply string, turns int) []byte {
		var msgs []string
		for i := range turns {
			text := fmt.Sprintf("turn %d %s", i, strings.Repeat("y", 500))
			switch i {
			case 0:
				text = task
			case 1:
				text = reply
			}
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q}`, text))
		}
		conv := `"messages":[` + strings.Join(msgs, ",") + `]`
		if first {
			return []byte(`{"model":"m",` + conv + `,` + system + `,"stream":true}`)
		}
		return []byte(`{"model":"m",` + system + `,` + conv + `}`)
	}
	for _, first := range []bool{true, false} {
		key := memoKey(body(first, "task A", "reply 1", 3), "messages")
		for turns := 4; turns < 120; turns++ {
			if k := memoKey(body(first, "task A", "reply 1", turns), "messages"); k != key {
				t.Fatalf("conversation first %v: the key changed at %d turns", first, turns)
			}
		}
		if memoKey(body(first, "task B", "reply 1", 9), "messages") == key {
			t.Fatalf("conversation first %v: two tasks share a key", first)
		}
		if memoKey(body(first, "task A", "reply 2", 9), "messages") == key {
			t.Fatalf("conversation first %v: two replies to one task share a key", first)
		}
		if memoKey(body(first, "task A", "reply 1", 9), "input") != memoWindowKey(body(first, "task A", "reply 1", 9)) {
			t.Fatalf("conversation first %v: a body without the member is not keyed by its bytes", first)
		}
	}
}

// TestReuseMember: a member after the conversation is derived once while
// the conversation grows with it unchanged, again when its bytes change
// (or anything after the conversation does), and a member before the
// conversation is reused from the shared bytes; the values are those of a
// derivation from scratch.
func TestReuseMember(t *testing.T) {
	tag := NewViewParser("test_tools")
	body := func(turns int, tools, after string) []byte {
		var msgs []string
		for i := range turns {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"turn %d %s"}`, i, strings.Repeat("y", 300)))
		}
		return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `],"tools":[` + tools + `],"system":` +
			fmt.Sprintf("%q", strings.Repeat("rules. ", 20<<10/7)) + after + `}`)
	}
	views := NewViewCache(64 << 20)
	derived := 0
	parse := func(b []byte) (model string, names []string) {
		t.Helper()
		pb, err := ParseBody(views, b, "messages")
		if err != nil {
			t.Fatal(err)
		}
		defer pb.Release()
		var m [2]gjson.Result
		pb.Idx.Lookup([]string{"model", "tools"}, m[:])
		names, err = ReuseMember(pb, tag, m[1], func() ([]string, error) {
			derived++
			var out []string
			m[1].ForEach(func(_, v gjson.Result) bool { out = append(out, v.Get("name").String()); return true })
			return out, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		model, _ = ReuseMember(pb, tag, m[0], func() (string, error) { derived++; return strings.Clone(m[0].Str), nil })
		return model, names
	}
	tools := `{"name":"Read"},{"name":"Bash"}`
	steps := []struct {
		body    []byte
		derived int // derivations the step makes
		names   string
	}{
		{body(10, tools, ``), 2, "Read,Bash"},                                           // first: derived
		{body(11, tools, ``), 0, "Read,Bash"},                                           // grown: both reused
		{body(12, tools, ``), 0, "Read,Bash"},                                           // again
		{body(13, `{"name":"Read"},{"name":"Grep"}`, ``), 1, "Read,Grep"},               // tools changed: derived; model reused
		{body(14, `{"name":"Read"},{"name":"Grep"}`, `,"stream":true`), 1, "Read,Grep"}, // the rest changed after the tools
		{body(15, `{"name":"Read"},{"name":"Grep"}`, `,"stream":true`), 0, "Read,Grep"},
		{body(15, `{"name":"Read"},{"name":"Grep"}`, `,"stream":true`), 0, "Read,Grep"}, // the same body again (a retry)
	}
	for i, s := range steps {
		before := derived
		model, names := parse(s.body)
		if got := derived - before; got != s.derived {
			t.Fatalf("step %d: %d derivations, want %d", i, got, s.derived)
		}
		if model != "m" || strings.Join(names, ",") != s.names {
			t.Fatalf("step %d: model %q, tools %v, want %s", i, model, names, s.names)
		}
	}
	// Without the memo: derived every time.
	pb, err := ParseBody(nil, steps[1].body, "messages")
	if err != nil {
		t.Fatal(err)
	}
	var m [1]gjson.Result
	pb.Idx.Lookup([]string{"tools"}, m[:])
	before := derived
	if _, err := ReuseMember(pb, tag, m[0], func() (int, error) { derived++; return 0, nil }); err != nil || derived != before+1 {
		t.Fatal("a body outside the memo reused a value")
	}
}

// TestContinuesMeasuresTheConversation: a body that differs from an
// earlier one in its conversation's first message does not continue it,
// even when an array before the conversation (tools sent first) lies
// whole in the bytes they share.
func TestContinuesMeasuresTheConversation(t *testing.T) {
	body := func(task string) []byte {
		var msgs []string
		for i := range 20 {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"%s turn %d %s"}`, task, i, strings.Repeat("y", 500)))
		}
		return []byte(`{"tools":[` + strings.Repeat(`{"name":"t","description":"`+strings.Repeat("d", 1000)+`"},`, 30) +
			`{"name":"last"}],"messages":[` + strings.Join(msgs, ",") + `]}`)
	}
	a, b := body("task A"), body("task B")
	prev, _ := jsonkit.ValidIndexed(a)
	n := CommonPrefix(a, b)
	if continues(n, conversationEnd(prev, "messages")) {
		t.Fatalf("a body differing from its first message on continues the earlier one (%d bytes shared of %d)", n, len(a))
	}
	if !continues(len(a)-10, conversationEnd(prev, "messages")) {
		t.Fatal("a body differing only at its end does not continue the earlier one")
	}
}
