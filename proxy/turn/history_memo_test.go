package turn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/shepherd-proxy/shepherd/state"
)

// memoBody is a Messages-shaped body with the given message texts.
func memoBody(texts []string, tail string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for i, t := range texts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":%q}`, t)
	}
	b.WriteString(`]` + tail + `}`)
	return []byte(b.String())
}

func wantHistory(body []byte) rewrite.History {
	var h rewrite.History
	rewrite.HashHistory(&h, body, "messages")
	return h
}

func sameHistory(t *testing.T, what string, got *rewrite.History, want rewrite.History) {
	t.Helper()
	if !slices.Equal(got.Hashes, want.Hashes) || !slices.Equal(got.Starts, want.Starts) || got.End != want.End {
		t.Fatalf("%s: got %v %v end %d, want %v %v end %d", what, got.Hashes, got.Starts, got.End, want.Hashes, want.Starts, want.End)
	}
}

// TestHashHistoriesMatchesWholeHash: whatever the session's previous
// request was (grown, edited early or late, shrunk, sent the same bytes as
// the agent's or not), the memo gives the hashes of a whole hash, and the
// caller's buffers may change after the call without touching the memo.
func TestHashHistoriesMatchesWholeHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{"first " + strings.Repeat("padding ", 1200)} // past the index memo's minimum
	edits := rand.New(rand.NewPCG(3, 4))                           // a stream of its own: rng's drives the memo's cases
	views := rewrite.NewViewCache(64 << 20)
	var ref *historyRef
	fromMemo, fromRuns := 0, 0             // steps that used the index memo's length; copy runs on both sides
	fromIndex := 0                         // new histories hashed from the codec's index
	indexed := rand.New(rand.NewPCG(3, 5)) // apart from rng, whose walk the counts above rely on
	for step := range 400 {
		switch op := rng.IntN(10); {
		case op < 6: // grow, as agents do
			texts = append(texts, strings.Repeat(fmt.Sprintf("t%d ", step), 1+rng.IntN(20)))
		case op == 6 && len(texts) > 1: // edit an earlier message
			texts[rng.IntN(len(texts))] = fmt.Sprintf("edited %d", step)
		case op == 7 && len(texts) > 2: // drop the tail
			texts = texts[:len(texts)-1-rng.IntN(2)]
		case op == 8 && len(texts) > 2: // drop the head (compaction)
			texts = texts[1+rng.IntN(2):]
		}
		body := memoBody(texts, `,"stream":false`)
		sent := body
		var runs []rewrite.CopyRun
		switch {
		case rng.IntN(2) == 0: // the model's view differs, copy runs unknown
			mod := slices.Clone(texts)
			mod[rng.IntN(len(mod))] += " <reminder>"
			sent = memoBody(mod, `,"max_tokens":9`)
		case edits.IntN(2) == 0: // the same edits spliced in, with their copy runs
			sent, runs = spliceBody(body, reminderSplices(body, edits))
		}
		// The lineage of body, from a parse through the index memo, as
		// the codecs report it (conv.Request.Lineage).
		pb, err := rewrite.ParseBody(views, body, "messages")
		if err != nil {
			t.Fatal(err)
		}
		lin := pb.Lineage
		pb.Release()
		if ref != nil && lin.Prev != 0 && lin.Prev == ref.agentGen {
			fromMemo++
		}
		if ref != nil && lin.Prev != 0 && lin.Prev == ref.agentGen {
			if (runs != nil || rewrite.SameSlice(body, sent)) && (ref.sentRuns != nil || rewrite.SameSlice(ref.agent, ref.sent)) {
				fromRuns++
			}
			if got, want := sharedSent(body, sent, runs, ref, lin.Shared), rewrite.CommonPrefix(sent, ref.sent); got != want {
				t.Fatalf("step %d: sharedSent %d, CommonPrefix %d", step, got, want)
			}
		}
		// Half the time the codec's index of body is known: a new
		// session's history is then hashed from its element spans.
		var idx *jsonkit.Index
		if indexed.IntN(2) == 0 {
			idx, _ = jsonkit.ValidIndexed(body)
			if ref == nil {
				fromIndex++
			}
		}
		ref = hashHistories(body, sent, runs, "messages", ref, lin, nil, idx)
		sameHistory(t, fmt.Sprintf("step %d agent", step), &ref.agentHist, wantHistory(body))
		sameHistory(t, fmt.Sprintf("step %d up", step), &ref.sentHist, wantHistory(sent))
		if string(ref.agent) != string(body) || string(ref.sent) != string(sent) {
			t.Fatalf("step %d: the memo's copies differ from the bodies", step)
		}
		for i := range body { // the caller's buffer is reused
			body[i] = 'x'
		}
		if rng.IntN(20) == 0 {
			ref = nil // evicted
		}
	}
	if fromIndex < 3 {
		t.Fatalf("a new history was hashed from an index %d times in 400 steps", fromIndex)
	}
	if fromRuns < 15 {
		t.Fatalf("both turns' copy runs were known %d times in 400 steps", fromRuns)
	}
	if fromMemo < 100 {
		t.Fatalf("the index memo's shared length was used %d times in 400 steps", fromMemo)
	}
}

// reminderSplices are the splices of an edit a hook could make to a
// memoBody: " <reminder>" at the end of one message's text, and its
// trailing "stream" member replaced by "max_tokens".
func reminderSplices(body []byte, rng *rand.Rand) []rewrite.Splice {
	var ends []int // the closing quote of each message's content
	for i := 0; ; {
		k := strings.Index(string(body[i:]), `"}`)
		if k < 0 {
			break
		}
		ends = append(ends, i+k)
		i += k + 2
	}
	at := ends[rng.IntN(len(ends))]
	tail := strings.LastIndex(string(body), `"stream":false`)
	return []rewrite.Splice{{Start: at, End: at, Bytes: []byte(" <reminder>")},
		{Start: tail, End: tail + len(`"stream":false`), Bytes: []byte(`"max_tokens":9`)}}
}

// spliceBody makes the splices ss to body and returns the result with its
// copy runs, worked out here, independently of package rewrite's.
func spliceBody(body []byte, ss []rewrite.Splice) ([]byte, []rewrite.CopyRun) {
	var out []byte
	var runs []rewrite.CopyRun
	at := 0
	for _, s := range ss {
		if s.Start > at {
			runs = append(runs, rewrite.CopyRun{Out: len(out), Src: at, Len: s.Start - at})
		}
		out = append(append(out, body[at:s.Start]...), s.Bytes...)
		at = s.End
	}
	if at < len(body) {
		runs = append(runs, rewrite.CopyRun{Out: len(out), Src: at, Len: len(body) - at})
	}
	return append(out, body[at:]...), runs
}

// TestHistoryMemoBounded: entries beyond the budget go least recently used
// first; take removes; one too large for a quarter of the budget is not
// kept; a nil memo keeps nothing.
func TestHistoryMemoBounded(t *testing.T) {
	m := newHistoryMemo(4000)
	key := func(i int) historyMemoKey {
		return historyMemoKey{key: state.Key{Session: fmt.Sprint(i)}, member: "messages"}
	}
	ref := func(n int) *historyRef { b := make([]byte, n); return &historyRef{agent: b, sent: b} }
	for i := range 5 {
		m.put(key(i), ref(900))
	}
	if used, budget := m.refs.Used(); used > budget || m.take(key(0)) != nil || m.take(key(1)) == nil {
		t.Fatalf("used %d of %d; oldest not evicted or newer lost", used, budget)
	}
	if m.take(key(1)) != nil {
		t.Fatal("take left the entry in the memo")
	}
	m.put(key(9), ref(1001))
	if m.take(key(9)) != nil {
		t.Fatal("an entry above a quarter of the budget was kept")
	}
	var none *historyMemo
	none.put(key(1), ref(1))
	if newHistoryMemo(0) != nil || none.take(key(1)) != nil {
		t.Fatal("a memo without budget keeps something")
	}
}

// BenchmarkHashHistories: one turn of a 1 MB conversation that the memo
// holds the previous turn of, the model's view spliced with reminders;
// "runs" knows both turns' copy runs (the upstream bodies' shared prefix
// found from the edits), "compare" does not (found by comparing them).
func BenchmarkHashHistories(b *testing.B) {
	texts := []string{"first " + strings.Repeat("padding ", 1200)}
	for i := range 900 {
		texts = append(texts, strings.Repeat(fmt.Sprintf("t%d ", i), 200))
	}
	prevBody := memoBody(texts[:len(texts)-1], `,"stream":false`)
	body := memoBody(texts, `,"stream":false`)
	rng := rand.New(rand.NewPCG(5, 6))
	ss := reminderSplices(prevBody, rng)
	prevSent, prevRuns := spliceBody(prevBody, ss)
	sent, runs := spliceBody(body, ss) // the same reminder, the same place
	lin := conv.BodyLineage{Prev: 1, Gen: 2, Shared: rewrite.CommonPrefix(body, prevBody)}
	for _, mode := range []string{"runs", "compare"} {
		b.Run(mode, func(b *testing.B) {
			r, pr := runs, prevRuns
			if mode == "compare" {
				r, pr = nil, nil
			}
			seed := hashHistories(prevBody, prevSent, pr, "messages", nil, conv.BodyLineage{Gen: 1}, nil, nil)
			ref := *seed
			b.SetBytes(int64(len(sent)))
			b.ResetTimer()
			for range b.N {
				// A fresh ref each time: hashHistories recycles its buffers.
				b.StopTimer()
				cur := ref
				cur.agent, cur.sent = slices.Clone(ref.agent), slices.Clone(ref.sent)
				cur.sentRuns = slices.Clone(ref.sentRuns)
				cur.agentHist, cur.sentHist = cloneHistory(&ref.agentHist), cloneHistory(&ref.sentHist)
				b.StartTimer()
				hashHistories(body, sent, r, "messages", &cur, lin, nil, nil)
			}
		})
	}
}

func cloneHistory(h *rewrite.History) rewrite.History {
	return rewrite.History{Hashes: slices.Clone(h.Hashes), Starts: slices.Clone(h.Starts), End: h.End}
}
