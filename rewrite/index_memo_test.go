package rewrite

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

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
		_, got, gerr := ParseIndexedWith(views, buf)
		_, want, werr := ParseIndexed(append([]byte(nil), buf...))
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("step %d: error %v, want %v", i, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: the memo's index differs from a whole validation", i)
		}
		for j := range buf {
			buf[j] = '!'
		}
	}
}

// TestIndexMemoKeySessions: two conversations that share a system prompt
// longer than the default key prefixes of the past (agents of one kind)
// key apart once they are longer than what they share, and each keeps its
// key while it grows, until three quarters of it cross a power of two.
func TestIndexMemoKeySessions(t *testing.T) {
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
	if memoKey(a) == memoKey(b) {
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
	if x, y := first("task A", 100), first("task B", 100); memoKey(x) == memoKey(y) {
		t.Fatal("two sessions differing only in their first message share a key")
	}
	same := 0
	for turns := 101; turns <= 140; turns++ {
		next := conv("alpha", turns)
		if memoKeyEnd(len(next)) == memoKeyEnd(len(a)) {
			if memoKey(next) != memoKey(a) {
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
// bytes coincide (one long prompt, then the same turns but for the first
// message's task, as a replayed task or the history benchmark's agents)
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
			if i == 0 {
				text = task + " " + text
			}
			fmt.Fprintf(&b, `{"role":"user","content":%q}`, text)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	tasks := []string{"task A", "task B", "task C"}
	if memoKey(conv(tasks[0], 30)) != memoKey(conv(tasks[1], 30)) {
		t.Fatal("the conversations do not collide: the test needs them to")
	}
	m := newIndexMemo(64 << 20)
	lastGen := map[string]uint64{}
	for turns := 30; turns < 36; turns++ {
		for _, task := range tasks {
			body := conv(task, turns)
			idx, ok, e := m.validIndexed(body)
			_, whole, werr := ParseIndexed(append([]byte(nil), body...))
			wok := werr == nil
			if !ok || !wok || e == nil || !reflect.DeepEqual(idx, whole) {
				t.Fatalf("%s at %d turns: ok %v, entry %v, or an index unlike a whole validation", task, turns, ok, e != nil)
			}
			if g, seen := lastGen[task]; seen {
				if e.prevGen != g {
					t.Fatalf("%s at %d turns resumed from another conversation's body", task, turns)
				}
				if !continues(e.shared, len(conv(task, turns-1))) {
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
