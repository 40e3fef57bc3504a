package turn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// spliceSession drives one engine through a session whose every request
// gets a user text on its newest turn, as the features' reminders do; the
// ledger then replays one text per earlier turn on each request.
type spliceSession struct {
	e       *Engine
	codec   rewrite.Codec
	metrics *countingMetrics
	// inPlace counts the bodies built in the buffer of the previous one
	// sent (rewrite.BuildTarget), whose memo entry the turn then holds.
	inPlace int
	// prefix is the last turn's cache-integrity record.
	prefix string
}

func newSpliceSession(memoBytes int64) *spliceSession {
	return newSpliceSessionHistory(memoBytes, 64<<20)
}

// newSpliceSessionHistory is newSpliceSession with a history memo of
// historyBytes (0: none, so no body is built in a previous one's buffer).
func newSpliceSessionHistory(memoBytes, historyBytes int64) *spliceSession {
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	m := &countingMetrics{}
	e := New(Options{Store: store, Metrics: m, Limits: Limits{MaxFollowups: 2, MaxRefusalRounds: 2},
		SpliceMemoBytes: memoBytes, HistoryMemoBytes: historyBytes})
	return &spliceSession{e: e, codec: anthropic.Descriptor.NewCodec(rewrite.NewViewCache(64 << 20)), metrics: m}
}

// send runs one turn of body and returns what went upstream.
func (s *spliceSession) send(t testing.TB, body []byte, note string) string {
	t.Helper()
	view, err := s.codec.ParseRequest(body)
	require.NoError(t, err)
	cc, _ := rewrite.Continuer(s.codec)
	chain := hooks.NewChain(editsHook{func(*conv.Request) conv.RequestEdits {
		return conv.RequestEdits{AppendUserText: []string{note}}
	}})
	tn, st := s.e.Begin(context.Background(), Request{
		Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s"},
		Chain: chain, Codec: s.codec, TurnCodec: s.codec.(rewrite.TurnCodec), Continuer: cc,
		View: view, Body: body,
	})
	require.NotNil(t, tn)
	sent := string(st.Body)
	s.prefix = ""
	if tn.Settle(); tn.prefix != nil {
		p := tn.prefix.turn
		s.prefix = fmt.Sprint(p.Hash, p.Elements, p.BreakElement, p.BreakOffset, p.Cause, p.First)
	}
	if tn.held != nil {
		require.True(t, rewrite.SameSlice(tn.held.sent, st.Body), "the entry held is the body's")
		s.inPlace++
	}
	w := &scriptWriter{replies: [][]byte{[]byte(reply("end_turn", "ok"))}}
	require.NoError(t, tn.Run(context.Background(), w, &scriptSender{}))
	return sent
}

// agentTurns is an Anthropic conversation of n user turns (tool results of
// about 1 KB, the first of 60 KB) with the assistant's turns between them:
// each request adds a little to a long history, as an agent's do.
func agentTurns(n int, edit func(i int, msg string) string) []byte {
	var msgs []string
	for i := range n {
		if i > 0 {
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"path":"f%d.go"}}]}`, i, i))
		}
		content := strings.Repeat("a line of the file the agent read\\n", 30)
		if i == 0 {
			content = strings.Repeat(content, 60)
		}
		msg := fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}`, i, content)
		if edit != nil {
			msg = edit(i, msg)
		}
		msgs = append(msgs, msg)
	}
	return msgsBody(msgs...)
}

// The session's requests go upstream with the same bytes with the memo as
// without it, and from the second request on the earlier turns take their
// edits from the memo: a marker put into a kept edit reaches the body.
func TestSpliceMemoTakesEarlierEdits(t *testing.T) {
	with, without := newSpliceSession(1<<20), newSpliceSession(0)
	// Without the history memo every body is built anew: with it, most are
	// built in the previous body's buffer, with the same bytes.
	fresh := newSpliceSessionHistory(1<<20, 0)
	key := state.Key{Tenant: "t", Session: "s"}
	for n := 1; n <= 8; n++ {
		body := agentTurns(n, nil)
		note := fmt.Sprintf("[reminder %d]", n)
		got, want := with.send(t, body, note), without.send(t, body, note)
		require.True(t, want == got, "request %d: the same bytes as without the memo", n)
		for i := 1; i <= n; i++ {
			require.True(t, strings.Contains(got, fmt.Sprintf("[reminder %d]", i)))
		}
		set, ok := with.e.splices.sets.Take(key)
		require.True(t, ok, "request %d kept its edits", n)
		require.Len(t, set.turns, n)
		with.e.splices.sets.Put(key, set)
	}
	// Every edit is counted, taken or made.
	taken, made := with.metrics.get("user_text_memo"), with.metrics.get("user_text_made")
	require.Equal(t, 8*9/2, taken+made)
	require.Positive(t, taken)
	require.Zero(t, without.metrics.get("user_text_memo")+without.metrics.get("user_text_made"), "no memo, no counts")

	// Another conversation in the same session: the set keeps its one
	// edit, none of the earlier body's (they were not vouched for since).
	other := agentTurns(1, func(_ int, msg string) string { return strings.Replace(msg, "a line", "a LINE", -1) })
	with.send(t, other, "[other]")
	set, ok := with.e.splices.sets.Take(key)
	require.True(t, ok)
	require.Len(t, set.turns, 1)
	with.e.splices.sets.Put(key, set)
	for n := 1; n <= 8; n++ {
		with.send(t, agentTurns(n, nil), fmt.Sprintf("[reminder %d]", n))
	}

	// A marker in the edit kept for the first turn: the next request,
	// whose first turn is the same bytes, takes it.
	mark := func(s *spliceSession, reminders ...int) {
		set, ok := s.e.splices.sets.Take(key)
		require.True(t, ok)
		for _, r := range reminders {
			old, marked := fmt.Sprintf("[reminder %d]", r), fmt.Sprintf("[MARKED %d]", r)
			for a, k := range set.turns {
				if strings.Contains(string(k.at.Splice.Bytes), old) {
					k.at.Splice.Bytes = []byte(strings.Replace(string(k.at.Splice.Bytes), old, marked, 1))
					set.turns[a] = k
				}
			}
		}
		s.e.splices.sets.Put(key, set)
	}
	mark(with, 1)
	taken, made = with.metrics.get("user_text_memo"), with.metrics.get("user_text_made")
	got := with.send(t, agentTurns(9, nil), "[reminder 9]")
	require.True(t, strings.Contains(got, "[MARKED 1]"), "the kept edit was taken")
	require.False(t, strings.Contains(got, "[reminder 1]"))
	// Seven earlier turns took their edits; the previous request's last
	// turn now has a separator after it (its span grew by one byte), so
	// its edit was made again, with the newest turn's.
	require.Equal(t, 7, with.metrics.get("user_text_memo")-taken)
	require.Equal(t, 2, with.metrics.get("user_text_made")-made)

	// The agent wrote its third turn's members in another order: the turn
	// reads the same (its anchor, and so its ledger entry, is the same) and
	// its span has the same length, but its bytes differ, so from there on
	// nothing is taken; before it the kept edits are.
	fresh, ref := newSpliceSession(1<<20), newSpliceSession(0)
	for n := 1; n <= 4; n++ {
		fresh.send(t, agentTurns(n, nil), fmt.Sprintf("[reminder %d]", n))
		ref.send(t, agentTurns(n, nil), fmt.Sprintf("[reminder %d]", n))
	}
	mark(fresh, 1, 3)
	changed := agentTurns(5, func(i int, msg string) string {
		if i == 2 {
			return strings.Replace(msg, `{"type":"tool_result","tool_use_id":"toolu_2",`, `{"tool_use_id":"toolu_2","type":"tool_result",`, 1)
		}
		return msg
	})
	got, want := fresh.send(t, changed, "[reminder 5]"), ref.send(t, changed, "[reminder 5]")
	require.True(t, strings.Contains(got, "[MARKED 1]"), "the turn before the change took its kept edit")
	require.True(t, strings.Contains(got, "[reminder 3]"), "the changed turn was edited again")
	require.False(t, strings.Contains(got, "[MARKED 3]"))
	got = strings.Replace(got, "[MARKED 1]", "[reminder 1]", 1)
	require.True(t, want == got, "otherwise the same bytes as without the memo")
}

// A session shared by two conversations (an agent and its sub-agent, one
// session id): every entry the turns record carries the first anchor of
// its own conversation and its anchor's position in it, and the agent's
// requests go upstream with the same bytes as in a session of its own.
func TestLedgerEntriesCarryTheirRoot(t *testing.T) {
	shared, alone := newSpliceSession(1<<20), newSpliceSession(1<<20)
	subAgent := func(n int) []byte {
		return agentTurns(n, func(i int, msg string) string {
			return strings.Replace(msg, "a line of", "a sub-agent's line of", -1)
		})
	}
	for n := 1; n <= 6; n++ {
		shared.send(t, subAgent(n), fmt.Sprintf("[sub %d]", n))
		got, want := shared.send(t, agentTurns(n, nil), fmt.Sprintf("[main %d]", n)), alone.send(t, agentTurns(n, nil), fmt.Sprintf("[main %d]", n))
		require.True(t, got == want, "request %d: the same bytes as in a session of its own", n)
	}
	roots, at := map[string]string{}, map[string]int{}
	for _, body := range [][]byte{agentTurns(6, nil), subAgent(6)} {
		view, err := shared.codec.ParseRequest(body)
		require.NoError(t, err)
		anchors := conv.Anchors(view.Messages)
		for i, a := range anchors {
			roots[a], at[a] = anchors[0], i+1
		}
	}
	sess, err := shared.e.store.Get(context.Background(), state.Key{Tenant: "t", Session: "s"})
	require.NoError(t, err)
	require.Len(t, sess.Ledger, 12)
	for _, e := range sess.Ledger {
		require.NotEmpty(t, e.Root)
		require.Equal(t, roots[e.Anchor], e.Root, "entry %s", e.Anchor)
		require.Equal(t, at[e.Anchor], e.At, "entry %s: its anchor's position, from 1", e.Anchor)
	}
	require.Equal(t, 6*6, shared.metrics.get("ledger_missed")-alone.metrics.get("ledger_missed"), // (n-1) + n for n = 1..6
		"each request passed over the other conversation's entries")
}

// BenchmarkBeginLongSession is a turn's begin (load, hooks, ledger replay,
// build) in a session of 100 or 400 turns with a user text in each, with
// and without the splice memo: with it, what a turn costs should not grow
// with the session. With sub, a sub-agent's conversation of that many
// turns shares the session (and its ledger). With rewound, the session went
// that many turns further before the agent rewound it to the benchmarked
// request (the ledger keeps their entries, which the replay passes over).
func BenchmarkBeginLongSession(b *testing.B) {
	for _, c := range []struct {
		memo            int64
		n, sub, rewound int
	}{{0, 100, 0, 0}, {1 << 20, 100, 0, 0}, {1 << 20, 400, 0, 0}, {1 << 20, 100, 300, 0}, {1 << 20, 400, 0, 16}} {
		name := fmt.Sprintf("splice_memo=%v/turns=%d", c.memo > 0, c.n)
		if c.sub > 0 {
			name += fmt.Sprintf("/sub_agent_turns=%d", c.sub)
		}
		if c.rewound > 0 {
			name += fmt.Sprintf("/rewound_turns=%d", c.rewound)
		}
		b.Run(name, func(b *testing.B) {
			s := newSpliceSession(c.memo)
			n := c.n
			for i := 1; i <= c.sub; i++ {
				s.send(b, agentTurns(i, func(_ int, msg string) string {
					return strings.Replace(msg, "a line of", "a sub-agent's line of", -1)
				}), fmt.Sprintf("[sub %d]", i))
			}
			for i := 1; i < n+c.rewound; i++ {
				s.send(b, agentTurns(i, nil), fmt.Sprintf("[reminder %d]", i))
			}
			body := agentTurns(n, nil)
			chain := hooks.NewChain(editsHook{func(*conv.Request) conv.RequestEdits {
				return conv.RequestEdits{AppendUserText: []string{"[reminder]"}}
			}})
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				view, err := s.codec.ParseRequest(body)
				if err != nil {
					b.Fatal(err)
				}
				tn, _ := s.e.Begin(context.Background(), Request{
					Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s"},
					Chain: chain, Codec: s.codec, TurnCodec: s.codec.(rewrite.TurnCodec),
					View: view, Body: body,
				})
				if tn == nil {
					b.Fatal("the turn fell back to pass-through")
				}
				tn.Settle()
				tn.releaseSent()
			}
		})
	}
}

// A random walk of a session's requests (turns added, an earlier turn's
// bytes changed with or without changing its length or its reading, a
// conversation started over) goes upstream with the same bytes with the
// splice memo as without it, at every step. Turns are tool results or
// plain text; the text turns' edit copies their text, so a turn that reads
// the same (same anchor) but is written differently (an escape's hex digits
// in another case) must not take an edit made of its old bytes.
func TestSpliceMemoRandomSessions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	with, without := newSpliceSession(1<<20), newSpliceSession(0)
	// Without the history memo every body is built anew: with it, most are
	// built in the previous body's buffer, with the same bytes.
	fresh := newSpliceSessionHistory(1<<20, 0)
	type turnText struct {
		content string
		swapped bool // the tool result's members in another order
		plain   bool // a text turn, not a tool result
	}
	base := strings.Repeat("a line of the file the agent read\\n", 30)
	var turns []turnText
	start := func() {
		turns = []turnText{{content: strings.Repeat(base, 60) + fmt.Sprint(rng.IntN(1000))}}
	}
	start()
	body := func() []byte {
		var msgs []string
		for i, tt := range turns {
			if i > 0 {
				msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"path":"f%d.go"}}]}`, i, i))
			}
			head := fmt.Sprintf(`"type":"tool_result","tool_use_id":"toolu_%d"`, i)
			if tt.swapped {
				head = fmt.Sprintf(`"tool_use_id":"toolu_%d","type":"tool_result"`, i)
			}
			if tt.plain {
				msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"%s"}`, tt.content))
			} else {
				msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{%s,"content":"%s"}]}`, head, tt.content))
			}
		}
		return msgsBody(msgs...)
	}
	for step := range 300 {
		switch r := rng.IntN(100); {
		case r < 55 || len(turns) < 3:
			turns = append(turns, turnText{content: fmt.Sprintf(`caf\u00e9 %d `, step) + base, plain: rng.IntN(2) == 0})
		case r < 65: // a byte changed, same length
			k := rng.IntN(len(turns))
			c := []byte(turns[k].content)
			c[len(c)-3] = 'X'
			turns[k].content = string(c)
		case r < 80: // the same reading, written differently
			k := rng.IntN(len(turns))
			turns[k].swapped = !turns[k].swapped
			if strings.Contains(turns[k].content, `\u00e9`) {
				turns[k].content = strings.Replace(turns[k].content, `\u00e9`, `\u00E9`, 1)
			} else {
				turns[k].content = strings.Replace(turns[k].content, `\u00E9`, `\u00e9`, 1)
			}
		case r < 90: // longer
			k := rng.IntN(len(turns))
			turns[k].content += "more"
		case r < 96: // the agent dropped its newest turns
			turns = turns[:len(turns)-1-rng.IntN(2)]
		default:
			start()
		}
		b := body()
		note := fmt.Sprintf("[note %d]", step)
		got, want := with.send(t, b, note), without.send(t, b, note)
		require.True(t, got == want, "step %d: the same bytes as without the memo", step)
		require.True(t, got == fresh.send(t, b, note), "step %d: the same bytes as built anew", step)
		require.NotEmpty(t, with.prefix)
		require.Equal(t, fresh.prefix, with.prefix, "step %d: the same cache-integrity record", step)
	}
	t.Logf("in place: %d of 300", with.inPlace)
	require.Greater(t, with.inPlace, 100, "bodies built in the previous one's buffer")
	require.Zero(t, fresh.inPlace)
	require.Greater(t, with.metrics.get("user_text_memo"), 300, "the walk took kept edits")
	require.Positive(t, with.metrics.get("user_text_made"))
}
