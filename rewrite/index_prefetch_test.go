package rewrite

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// prefetchBody is a body in Claude Code's order (messages first, then a
// system prompt and tools) of a session: its first two messages are the
// task's (shared by sessions with one task), the turns after them the
// session's; edit, when not empty, is added to turn 5.
func prefetchBody(task, session string, turns int, edit string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for i := range turns {
		if i > 0 {
			b.WriteByte(',')
		}
		who, text := session, strings.Repeat("the file's line. ", 60)
		if i < 2 {
			who = task
		}
		if i == 5 {
			text += edit
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"role":%q,"content":"%s turn %d %s"}`, role, who, i, text)
	}
	fmt.Fprintf(&b, `],"system":%q,"tools":[{"name":"Read","input_schema":{"type":"object"}}],"stream":false}`,
		strings.Repeat("rules. ", 3000))
	return []byte(b.String())
}

// feedInPieces copies body into a buffer of its size in random pieces (up
// to 96 KB, or, one time in three, 2 KB: the key's bytes then arrive over
// several reads), feeding p after each, as the proxy's reader does (but
// for the last piece, one time in two: the parse then compares it), and
// returns the buffer.
func feedInPieces(rng *rand.Rand, p *BodyPrefetch, body []byte) []byte {
	buf := make([]byte, 0, len(body))
	skipLast := rng.IntN(2) == 0
	most := []int{96 << 10, 96 << 10, 2 << 10}[rng.IntN(3)]
	for len(buf) < len(body) {
		n := min(len(body)-len(buf), 1+rng.IntN(most))
		buf = append(buf, body[len(buf):len(buf)+n]...)
		if len(buf) < len(body) || !skipLast {
			p.Feed(buf)
		}
	}
	return buf
}

// A session's bodies parsed with the comparison made while they arrive
// are indexed as without it (and as a whole validation), resume from the
// same bodies, and share the same bytes with them, through growth, an
// edited early turn, sessions with one task (one memo key, several ways),
// a body that stops being valid, prefetches closed without a parse, and
// bodies too short for one. Every buffer is overwritten once parsed.
func TestBodyPrefetchSameAsWithout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	with, without := NewViewCache(256<<20), NewViewCache(256<<20)
	turns := map[string]int{"a": 70, "b": 80, "c": 75}
	edits := map[string]string{}
	prefetched := 0
	for step := range 300 {
		session := []string{"a", "b", "c"}[rng.IntN(3)]
		switch r := rng.IntN(20); {
		case r == 0:
			edits[session] += " edited"
		case r == 1:
			turns[session] = 70 // compacted, or started over
		default:
			turns[session] += 1 + rng.IntN(2)
		}
		body := prefetchBody("task", session, turns[session], edits[session])
		if step%37 == 36 {
			body = append(body[:len(body)-1], ',') // not JSON
		}
		if step%41 == 40 {
			body = prefetchBody("task", session, 3, "") // below prefetchMinBytes
		}

		pf := with.PrefetchBody("messages", len(body))
		if (pf != nil) != (len(body) >= prefetchMinBytes) {
			t.Fatalf("step %d: prefetch %v for a body of %d bytes", step, pf != nil, len(body))
		}
		buf := feedInPieces(rng, pf, body)
		if step%13 == 12 {
			pf.Close() // the request ended before its parse
			pf.Close()
			clear(buf)
			continue
		}
		before := with.Prefetched()
		got, gerr := ParseBody(with, buf, "messages")
		pf.Close()
		want, werr := ParseBody(without, append([]byte(nil), body...), "messages")
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("step %d: error %v, without the prefetch %v", step, gerr, werr)
		}
		if werr != nil {
			clear(buf)
			continue
		}
		_, whole, _ := ParseIndexed(append([]byte(nil), body...))
		if !got.Idx.SameSpans(want.Idx) || !got.Idx.SameSpans(whole) {
			t.Fatalf("step %d: the index differs from the one parsed without the prefetch", step)
		}
		if got.Lineage.Shared != want.Lineage.Shared || (got.Lineage.Prev == 0) != (want.Lineage.Prev == 0) {
			t.Fatalf("step %d: lineage %+v, without the prefetch %+v", step, got.Lineage, want.Lineage)
		}
		gr, gt := got.Idx.Resumed()
		wr, wt := want.Idx.Resumed()
		if gr != wr || gt != wt {
			t.Fatalf("step %d: resumed %v/%v, without the prefetch %v/%v", step, gr, gt, wr, wt)
		}
		if with.Prefetched() > before {
			prefetched++
			if got.Lineage.Prev == 0 {
				t.Fatalf("step %d: counted as prefetched without an earlier body", step)
			}
		}
		got.Release()
		want.Release()
		clear(buf)
	}
	if prefetched < 150 {
		t.Fatalf("only %d of 300 bodies were compared while they arrived", prefetched)
	}
	if n := with.bodies.prefetches.n.Load(); n != 0 {
		t.Fatalf("%d prefetches left registered", n)
	}
	if a, b := with.bodies.entries.Len(), without.bodies.entries.Len(); a != b {
		t.Fatalf("the memo holds %d bodies, %d without the prefetch", a, b)
	}
}

// A prefetch whose body moves to another buffer (one that grew while it
// was read) ends, handing back the bodies it took: the parse compares the
// body whole, from the same earlier body.
func TestBodyPrefetchBufferMoved(t *testing.T) {
	views := NewViewCache(64 << 20)
	first := prefetchBody("task", "a", 70, "")
	b, err := ParseBody(views, first, "messages")
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	next := prefetchBody("task", "a", 72, "")
	pf := views.PrefetchBody("messages", len(next))
	small := append(make([]byte, 0, 40<<10), next[:40<<10]...)
	pf.Feed(small)
	if views.bodies.entries.Len() != 0 {
		t.Fatal("the prefetch did not take the earlier body")
	}
	grown := append(make([]byte, 0, len(next)), next...)
	pf.Feed(grown)
	if views.bodies.entries.Len() != 1 || views.bodies.prefetches.n.Load() != 0 {
		t.Fatal("the prefetch of a moved buffer kept the earlier body")
	}
	b, err = ParseBody(views, grown, "messages")
	if err != nil {
		t.Fatal(err)
	}
	if b.Lineage.Prev == 0 || b.Lineage.Shared < len(first)/2 {
		t.Fatalf("lineage %+v: not resumed from the earlier body", b.Lineage)
	}
	if views.Prefetched() != 0 {
		t.Fatal("counted as prefetched")
	}
	b.Release()
	pf.Close()
}

// The key a prefetch takes from a body still arriving is the whole body's:
// once the separator after the conversation's second element is in, no
// later byte changes it.
func FuzzConversationKeyPrefix(f *testing.F) {
	f.Add([]byte(`{"messages":[{"a":1},"x",3]}`), "messages")
	f.Add([]byte(`{"model":"m","messages":[1,2],"tools":[]}`), "messages")
	f.Add([]byte(`{"system":"s\"]","input":[ "p" , {"k":[1,2]} ,{}]}`), "input")
	f.Add([]byte(`{"contents":[12,345,6]}`), "contents")
	f.Add([]byte(`{"contents":[true,nul`), "contents")
	f.Fuzz(func(t *testing.T, body []byte, conversation string) {
		if conversation == "" {
			return
		}
		wk, wn, wm := conversationKey(body, conversation)
		for i := range len(body) {
			k, n, more := conversationKey(body[:i], conversation)
			if n == 2 && more && (k != wk || wn != 2 || !wm) {
				t.Fatalf("the first %d bytes key %x (2, more), the whole body %x (%d, %v)", i, k, wk, wn, wm)
			}
		}
	})
}

// A body whose first two messages end past prefetchKeyWithin is not
// prefetched (its key is looked for about twice over, then no more): the
// parse compares it whole, from the earlier body, as without a prefetch.
func TestBodyPrefetchGivesUpOnALateKey(t *testing.T) {
	views := NewViewCache(64 << 20)
	huge := func(turns int) []byte {
		b := prefetchBody("task", "a", turns, "")
		return []byte(strings.Replace(string(b), "task turn 0 ", "task turn 0 "+strings.Repeat("pasted file. ", prefetchKeyWithin/12), 1))
	}
	b, err := ParseBody(views, huge(70), "messages")
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	next := huge(72)
	pf := views.PrefetchBody("messages", len(next))
	buf := make([]byte, 0, len(next))
	for len(buf) < len(next) {
		buf = append(buf, next[len(buf):min(len(next), len(buf)+4<<10)]...)
		pf.Feed(buf)
		if views.bodies.entries.Len() != 1 {
			t.Fatalf("at %d bytes the prefetch took the earlier body", len(buf))
		}
	}
	b, err = ParseBody(views, buf, "messages")
	if err != nil {
		t.Fatal(err)
	}
	if b.Lineage.Prev == 0 || views.Prefetched() != 0 {
		t.Fatalf("lineage %+v, prefetched %d: want resumed without the prefetch", b.Lineage, views.Prefetched())
	}
	b.Release()
	pf.Close()
}
