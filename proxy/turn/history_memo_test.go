package turn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
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
	views := rewrite.NewViewCache(64 << 20)
	var ref *historyRef
	fromMemo := 0
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
		if rng.IntN(2) == 0 { // the model's view differs from the agent's
			mod := slices.Clone(texts)
			mod[rng.IntN(len(mod))] += " <reminder>"
			sent = memoBody(mod, `,"max_tokens":9`)
		}
		// The lineage of body, from a parse through the index memo, as
		// the codecs report it (conv.Request.Lineage).
		pb, err := rewrite.ParseBody(views, body)
		if err != nil {
			t.Fatal(err)
		}
		lin := pb.Lineage
		pb.Release()
		if ref != nil && lin.Prev != 0 && lin.Prev == ref.agentGen {
			fromMemo++
		}
		var agent, up rewrite.History
		ref = hashHistories(&agent, &up, body, sent, "messages", ref, lin)
		sameHistory(t, fmt.Sprintf("step %d agent", step), &agent, wantHistory(body))
		sameHistory(t, fmt.Sprintf("step %d up", step), &up, wantHistory(sent))
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
	if fromMemo < 100 {
		t.Fatalf("the index memo's shared length was used %d times in 400 steps", fromMemo)
	}
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
