package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/state"
)

// prefixMetrics counts PrefixBreak calls by cause.
type prefixMetrics struct {
	countingMetrics
	breaks map[string]int
}

func (m *prefixMetrics) PrefixBreak(_, cause string) {
	if m.breaks == nil {
		m.breaks = map[string]int{}
	}
	m.breaks[cause]++
}

func msgsBody(msgs ...string) []byte {
	return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `],"max_tokens":10}`)
}

func prefixTurn(m *prefixMetrics, agent, sent []byte) *Turn {
	e := New(Options{Store: state.NewMemory(state.MemoryOptions{MaxSessions: 1, TTL: time.Hour}), Metrics: m,
		Now: func() time.Time { return time.Unix(100, 0) }})
	return &Turn{e: e, body: agent, sent: sent, call: hooks.Call{Route: "anthropic", RequestID: "r1"}}
}

// checkPrefix runs the turn's check as Begin starts it and waits for it.
func (t *Turn) checkPrefix(sess *state.Session, key string, replaced, dropped bool) *prefixCheck {
	t.startPrefix(sess, key, nil, replaced, dropped)
	return t.prefixResult()
}

// TestCheckPrefix: each decision of the check, after a first turn that
// recorded the agent's [u1] and the upstream's [u1 a1].
func TestCheckPrefix(t *testing.T) {
	const u1, a1, u2, x = `{"role":"user","content":"q1"}`, `{"role":"assistant","content":"a1"}`, `{"role":"user","content":"q2"}`, `{"role":"user","content":"injected"}`
	a1cc := `{"role":"assistant","content":[{"type":"text","text":"a1","cache_control":{"type":"ephemeral"}}]}`
	a1plain := `{"role":"assistant","content":[{"type":"text","text":"a1"}]}`
	for name, tc := range map[string]struct {
		firstAgent, firstSent []byte
		agent, sent           []byte
		replaced, dropped     bool
		first                 bool
		breakElem             int
		cause                 string
	}{
		"first turn":               {agent: msgsBody(u1), sent: msgsBody(u1), first: true, breakElem: -1},
		"extends":                  {firstAgent: msgsBody(u1), firstSent: msgsBody(u1), agent: msgsBody(u1, a1, u2), sent: msgsBody(u1, a1, u2), breakElem: -1},
		"breakpoint moved":         {firstAgent: msgsBody(u1, a1cc), firstSent: msgsBody(u1, a1cc), agent: msgsBody(u1, a1plain, u2), sent: msgsBody(u1, a1plain, u2), breakElem: -1},
		"agent edited its history": {firstAgent: msgsBody(u1, a1), firstSent: msgsBody(u1, a1), agent: msgsBody(u1, u2), sent: msgsBody(u1, u2), breakElem: 1, cause: CauseClient},
		"proxy changed it":         {firstAgent: msgsBody(u1, a1), firstSent: msgsBody(u1, a1), agent: msgsBody(u1, a1, u2), sent: msgsBody(u1, x, a1, u2), breakElem: 1, cause: CauseProxy},
		"compaction":               {firstAgent: msgsBody(u1, a1), firstSent: msgsBody(u1, a1), agent: msgsBody(u1, a1, u2), sent: msgsBody(u1, x, u2), replaced: true, breakElem: 1, cause: CauseCompaction},
		"gating":                   {firstAgent: msgsBody(u1, a1), firstSent: msgsBody(u1, a1), agent: msgsBody(u1, a1, u2), sent: msgsBody(u2), dropped: true, breakElem: 0, cause: CauseGating},
		"shorter":                  {firstAgent: msgsBody(u1), firstSent: msgsBody(u1, a1), agent: msgsBody(u1, a1), sent: msgsBody(u1), breakElem: 1, cause: CauseProxy},
		"another conversation":     {firstAgent: msgsBody(u1), firstSent: msgsBody(u1), agent: msgsBody(u2), sent: msgsBody(u2), first: true, breakElem: -1},
	} {
		t.Run(name, func(t *testing.T) {
			m := &prefixMetrics{}
			sess := &state.Session{}
			if tc.firstAgent != nil {
				c := prefixTurn(m, tc.firstAgent, tc.firstSent).checkPrefix(sess, "messages", false, false)
				c.record(sess, nil)
				sess = roundTrip(t, sess)
			}
			tr := prefixTurn(m, tc.agent, tc.sent)
			c := tr.checkPrefix(sess, "messages", tc.replaced, tc.dropped)
			require.NotNil(t, c)
			p := c.turn
			require.Equal(t, tc.first, p.First)
			require.Equal(t, tc.breakElem, p.BreakElement)
			require.Equal(t, tc.cause, p.Cause)
			require.Equal(t, time.Unix(100, 0), p.At)
			switch {
			case tc.breakElem < 0:
				require.Equal(t, -1, p.BreakOffset)
				require.Empty(t, m.breaks)
			case tc.cause == CauseProxy && name == "shorter":
				require.Equal(t, byte(']'), tc.sent[p.BreakOffset], "elements missing: the offset is the closing bracket")
			default:
				require.Equal(t, byte('{'), tc.sent[p.BreakOffset])
				require.Equal(t, map[string]int{tc.cause: 1}, m.breaks)
			}
			require.Len(t, p.Hash, 16)
			c.record(sess, &turnUsage{})
			st, err := PrefixOf(roundTrip(t, sess))
			require.NoError(t, err)
			require.Equal(t, p.Cause, st.Turns[len(st.Turns)-1].Cause)
			if tc.cause != "" {
				require.Equal(t, int64(1), st.Breaks[tc.cause])
				require.Equal(t, int64(1), st.Counts()["prefix_breaks"])
			}
		})
	}
}

// TestPrefixHashDiffers: the prefix hash names the conversation.
func TestPrefixHashDiffers(t *testing.T) {
	m := &prefixMetrics{}
	a := prefixTurn(m, msgsBody(`{"role":"user","content":"a"}`), msgsBody(`{"role":"user","content":"a"}`)).checkPrefix(&state.Session{}, "messages", false, false)
	b := prefixTurn(m, msgsBody(`{"role":"user","content":"b"}`), msgsBody(`{"role":"user","content":"b"}`)).checkPrefix(&state.Session{}, "messages", false, false)
	require.NotEqual(t, a.turn.Hash, b.turn.Hash)
	require.Nil(t, prefixTurn(m, msgsBody(), msgsBody()).checkPrefix(&state.Session{}, "messages", false, false), "no conversation, no record")
}

// TestPrefixSlotBounds: tracks and turns stay bounded; the current
// conversation's track comes first.
func TestPrefixSlotBounds(t *testing.T) {
	m := &prefixMetrics{}
	sess := &state.Session{}
	for i := range 30 {
		b := msgsBody(fmt.Sprintf(`{"role":"user","content":"conversation %d"}`, i%6))
		prefixTurn(m, b, b).checkPrefix(sess, "messages", false, false).record(sess, &turnUsage{})
	}
	st, err := PrefixOf(roundTrip(t, sess))
	require.NoError(t, err)
	require.Len(t, st.Tracks, maxPrefixTracks)
	require.Len(t, st.Turns, maxPrefixTurns)
	b := msgsBody(`{"role":"user","content":"conversation 5"}`)
	c := prefixTurn(m, b, b).checkPrefix(sess, "messages", false, false)
	require.False(t, c.turn.First, "the latest conversation is followed")
}

// roundTrip serialises sess's slots as a store does and reads them back.
func roundTrip(t *testing.T, sess *state.Session) *state.Session {
	t.Helper()
	raw, err := json.Marshal(sess)
	require.NoError(t, err)
	var out state.Session
	require.NoError(t, json.Unmarshal(raw, &out))
	return &out
}

// history builds an Anthropic body of about size bytes: user turns with
// tool results and assistant turns with text, as a coding agent's.
func history(size int) []byte {
	var msgs []string
	result := strings.Repeat("line of a file that was read by the agent\\n", 40) // ~1.7 KB
	n := 0
	for i := 0; n < size; i++ {
		var m string
		if i%2 == 0 {
			m = fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}`, i, result)
		} else {
			m = fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Reading the next file, step %d."},{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"path":"f%d.go"}}]}`, i, i+1, i)
		}
		msgs = append(msgs, m)
		n += len(m)
	}
	return msgsBody(msgs...)
}

// BenchmarkCheckPrefix is the added cost per request: hashing the agent's
// and the upstream conversation, finding the track, comparing (the save's
// record is measured separately).
func BenchmarkCheckPrefix(b *testing.B) {
	for _, size := range []int{50 << 10, 1 << 20} {
		body := history(size)
		m := &prefixMetrics{}
		sess := &state.Session{}
		prefixTurn(m, body, body).checkPrefix(sess, "messages", false, false).record(sess, &turnUsage{})
		tr := prefixTurn(m, body, body)
		b.Run(fmt.Sprintf("check/%dKB", len(body)>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if c := tr.checkPrefix(sess, "messages", false, false); c.turn.Broken() {
					b.Fatal("broken")
				}
			}
		})
		c := tr.checkPrefix(sess, "messages", false, false)
		b.Run(fmt.Sprintf("record/%dKB", len(body)>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.record(sess, &turnUsage{})
			}
		})
		b.Run(fmt.Sprintf("encode/%dKB", len(body)>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(sess.Slots); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPrefixFollowsTheLastUpstreamRequest: a turn with a refusal round
// sends a follow-up; the next turn (its ledger replaying the refusal) must
// extend that follow-up, not the turn's first request, and does.
func TestPrefixFollowsTheLastUpstreamRequest(t *testing.T) {
	for name, replies := range map[string][]string{
		"refusal round": {reply("tool_use", "", "rm"), reply("end_turn", "done")},
		"continuation":  {reply("max_tokens", "The first half"), reply("end_turn", " and the rest.")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
			m := &prefixMetrics{}
			f.e.metrics = m
			w, up := f.run(t, replies[0], replies[1:]...)
			require.Len(t, up.sent, 1)

			sess, err := f.store.Get(context.Background(), state.Key{Tenant: "t", Session: "s1"})
			require.NoError(t, err)
			st, err := PrefixOf(sess)
			require.NoError(t, err)
			var h rewrite.History
			rewrite.HashHistory(&h, []byte(up.sent[0]), "messages")
			require.Equal(t, h.Hashes, []uint32(st.Tracks[0].Upstream), "the follow-up is the base of the next turn")

			// The agent's next request: its copy of the reply, then a new message.
			content := gjson.GetBytes(w.final.Reply, "content").Raw
			next := strings.Replace(agentRequest, `"content":"hello"}]`,
				`"content":"hello"},{"role":"assistant","content":`+content+`},{"role":"user","content":"thanks"}]`, 1)
			codec := anthropic.Descriptor.Codec()
			view, err := codec.ParseRequest([]byte(next))
			require.NoError(t, err)
			tn, start := f.e.Begin(context.Background(), Request{
				Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1"},
				Chain: f.chain, Codec: codec, TurnCodec: codec, View: view, Body: []byte(next),
			})
			require.NotNil(t, tn)
			p, ok := tn.Prefix()
			require.True(t, ok)
			require.False(t, p.First)
			require.Equal(t, -1, p.BreakOffset, "upstream %s\nafter %s", start.Body, up.sent[0])
			require.Empty(t, m.breaks)
		})
	}
}

// TestPrefixCloneIndependent: clones share the slot's slices and map, so a
// turn recorded into either copy (tracks, turns at the bound, a break)
// must leave the other exactly as it was.
func TestPrefixCloneIndependent(t *testing.T) {
	m := &prefixMetrics{}
	sess := &state.Session{}
	for i := range maxPrefixTurns + 2 {
		b := msgsBody(fmt.Sprintf(`{"role":"user","content":"conversation %d"}`, i%(maxPrefixTracks+1)))
		prefixTurn(m, b, b).checkPrefix(sess, "messages", false, false).record(sess, &turnUsage{})
	}
	snapshot := func(s *state.Session) string {
		raw, err := json.Marshal(s.Slots)
		require.NoError(t, err)
		return string(raw)
	}
	// A break, so that Breaks is set and recorded into.
	grown := msgsBody(`{"role":"user","content":"conversation 1"}`, `{"role":"assistant","content":"x"}`)
	broken := msgsBody(`{"role":"user","content":"conversation 1"}`, `{"role":"assistant","content":"y"}`)
	prefixTurn(m, grown, grown).checkPrefix(sess, "messages", false, false).record(sess, &turnUsage{})
	c := prefixTurn(m, grown, broken).checkPrefix(sess, "messages", false, false)
	require.True(t, c.turn.Broken())
	c.record(sess, &turnUsage{})
	st, err := PrefixOf(sess)
	require.NoError(t, err)
	require.NotEmpty(t, st.Breaks)

	for _, into := range []string{"clone", "original"} {
		t.Run(into, func(t *testing.T) {
			orig := &state.Session{}
			orig.SetSlot(PrefixSlotName, st.CloneSlot())
			clone := &state.Session{}
			clone.SetSlot(PrefixSlotName, orig.Slots[PrefixSlotName].CloneSlot())
			target, other := clone, orig
			if into == "original" {
				target, other = orig, clone
			}
			before := snapshot(other)
			for i := range 3 {
				b := msgsBody(fmt.Sprintf(`{"role":"user","content":"new %d"}`, i))
				prefixTurn(m, b, b).checkPrefix(target, "messages", false, false).record(target, &turnUsage{})
				prefixTurn(m, grown, grown).checkPrefix(target, "messages", false, false).record(target, &turnUsage{})
				c := prefixTurn(m, grown, broken).checkPrefix(target, "messages", false, false)
				require.True(t, c.turn.Broken())
				c.record(target, &turnUsage{})
			}
			require.NotEqual(t, before, snapshot(target))
			require.Equal(t, before, snapshot(other), "recording into the %s changed the other copy", into)
		})
	}
}

// panickyPrefixMetrics panics when a break is counted: a check that fails
// in its goroutine.
type panickyPrefixMetrics struct{ countingMetrics }

func (m *panickyPrefixMetrics) PrefixBreak(_, _ string) { panic("metrics sink broken") }

// A check that panics in its goroutine does not take the process down: the
// turn has no cache-integrity record, the failure is counted as a hook's,
// and Settle returns.
func TestPrefixCheckPanicFailsOpen(t *testing.T) {
	const u1, a1, u2 = `{"role":"user","content":"q1"}`, `{"role":"assistant","content":"a1"}`, `{"role":"user","content":"q2"}`
	sess := &state.Session{}
	prefixTurn(&prefixMetrics{}, msgsBody(u1, a1), msgsBody(u1, a1)).checkPrefix(sess, "messages", false, false).record(sess, nil)
	m := &panickyPrefixMetrics{}
	e := New(Options{Store: state.NewMemory(state.MemoryOptions{MaxSessions: 1, TTL: time.Hour}), Metrics: m})
	tr := &Turn{e: e, body: msgsBody(u1, u2), sent: msgsBody(u1, u2), call: hooks.Call{Route: "anthropic", RequestID: "r1"}}
	tr.startPrefix(sess, "messages", nil, false, false) // the history changed: a break is counted
	tr.Settle()
	_, ok := tr.Prefix()
	require.False(t, ok)
	require.Equal(t, 1, m.get("hook_failed_cache_integrity"))
}

func TestHex16(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xabc, 1<<64 - 1, 0x0123456789abcdef} {
		require.Equal(t, fmt.Sprintf("%016x", v), hex16(v))
	}
}
