package budgets

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// countingCounters counts the calls the hook makes to the store's
// Counters (each a round trip on Redis).
type countingCounters struct {
	state.Counters
	calls atomic.Int64
}

func (c *countingCounters) Reserve(ctx context.Context, k state.Key, name string, n, limit int64) (int64, bool, error) {
	c.calls.Add(1)
	return c.Counters.Reserve(ctx, k, name, n, limit)
}
func (c *countingCounters) Add(ctx context.Context, k state.Key, name string, n int64) (int64, error) {
	c.calls.Add(1)
	return c.Counters.Add(ctx, k, name, n)
}
func (c *countingCounters) Streak(ctx context.Context, k state.Key, name, sig string) (int64, error) {
	c.calls.Add(1)
	return c.Counters.Streak(ctx, k, name, sig)
}

// stagedRig runs turns as the turn engine does with a store that reads the
// counters with the session: load, request hooks, reply hooks, one save
// applying the effects (the usage added as usage.go adds it), outcome.
type stagedRig struct {
	*harness
	mem     *state.Memory
	counted *countingCounters
}

func newStagedRig(t *testing.T, lim Limits, rules ...string) *stagedRig {
	t.Helper()
	mem := state.NewMemory(state.MemoryOptions{TTL: time.Hour})
	t.Cleanup(func() { _ = mem.Close() })
	mem.PrefetchCounters()
	cc := &countingCounters{Counters: mem}
	hs := newHarnessWith(t, cc, lim, rules...)
	hs.h.o.Staged = true
	hs.store = mem
	return &stagedRig{harness: hs, mem: mem, counted: cc}
}

// pendingTurn is a turn between its request hooks and its save.
type pendingTurn struct {
	call    *hooks.Call
	effects []func(*state.Session)
	resp    *hooks.Response
}

// begin loads the session and runs the request side.
func (sr *stagedRig) begin(t *testing.T, session string) *pendingTurn {
	t.Helper()
	key := state.Key{Tenant: "t", Session: session}
	sess, err := sr.mem.Get(ctx, key)
	if errors.Is(err, state.ErrNotFound) {
		sess, err = &state.Session{ID: session, Tenant: "t"}, nil
	}
	require.NoError(t, err)
	call := newCall(session)
	call.Session = sess
	pt := &pendingTurn{call: call}
	pt.resp = sr.request(t, call)
	pt.effects = call.TakeDeferred()
	return pt
}

// reply runs the reply side on r.
func (sr *stagedRig) reply(t *testing.T, pt *pendingTurn, r *conv.Reply) hooks.ReplyDecision {
	t.Helper()
	d, err := sr.h.OnReply(ctx, pt.call, r)
	require.NoError(t, err)
	pt.effects = append(pt.effects, d.Effects...)
	return d
}

// end saves the turn with its spend and runs the outcome.
func (sr *stagedRig) end(t *testing.T, pt *pendingTurn, u conv.Usage, cost float64, calls ...conv.Outcome) {
	t.Helper()
	key := state.Key{Tenant: "t", Session: pt.call.SessionID}
	saved, err := sr.mem.Update(ctx, key, func(s *state.Session) error {
		s.Requests++
		for _, fx := range pt.effects {
			fx(s)
		}
		s.Usage.Turns++
		s.Usage.InputTokens += u.InputTokens
		s.Usage.OutputTokens += u.OutputTokens
		s.Usage.CostUSD += cost
		return nil
	})
	require.NoError(t, err)
	pt.call.Saved = saved
	require.NoError(t, sr.h.OnOutcome(ctx, pt.call, &conv.TurnOutcome{Usage: u, CostUSD: cost, Calls: calls}))
}

// TestStagedRequestBudgets: with the counters read with the session, each
// request budget refuses once reached, the counters hold the real spend
// (no estimate left) and the hook made no counter call of its own.
func TestStagedRequestBudgets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lim   Limits
		spend conv.Usage
		cost  float64
		pass  int
		want  map[string]int64
	}{
		{"turns", Limits{Turns: 2}, usage(10, 5), 0, 2, map[string]int64{"turns": 2}},
		{"tokens", Limits{Tokens: 2050}, usage(900, 100), 0, 2, map[string]int64{"tokens": 2000}},
		{"cost", Limits{CostMicros: 25_000}, usage(10, 5), 0.01, 3, map[string]int64{"cost_micros": 30_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sr := newStagedRig(t, tc.lim)
			for i := range tc.pass {
				pt := sr.begin(t, "s")
				require.Nil(t, pt.resp, "request %d passes", i)
				sr.end(t, pt, tc.spend, tc.cost)
			}
			assert.Equal(t, tc.want, sr.counters(t, "s"), "the real spend, saved with the turns")
			pt := sr.begin(t, "s")
			require.NotNil(t, pt.resp, "the next request is refused")
			assert.Equal(t, 429, pt.resp.Status)
			assert.Empty(t, pt.effects, "a refused request stages nothing")
			assert.Zero(t, sr.counted.calls.Load(), "no counter call: load and save carry them")
		})
	}
}

// TestStagedInFlight: requests of one session on one replica see what the
// others hold: one reading the session before another's save landed
// counts that save's turn even when it decides after.
func TestStagedInFlight(t *testing.T) {
	sr := newStagedRig(t, Limits{Turns: 2})
	a := sr.begin(t, "s")
	require.Nil(t, a.resp)
	b := sr.begin(t, "s")
	require.Nil(t, b.resp, "two turns fit")
	c := sr.begin(t, "s")
	require.NotNil(t, c.resp, "the third is refused while two are in flight")
	sr.end(t, a, usage(1, 1), 0)
	sr.end(t, b, usage(1, 1), 0)
	assert.Equal(t, map[string]int64{"turns": 2}, sr.counters(t, "s"))

	// d reads the session before e's save lands and decides after it.
	sr = newStagedRig(t, Limits{Turns: 2})
	sr.end(t, sr.begin(t, "s"), usage(1, 1), 0) // 1 of 2 taken, version 1
	stale, err := sr.mem.Get(ctx, state.Key{Tenant: "t", Session: "s"})
	require.NoError(t, err)
	e := sr.begin(t, "s")
	require.Nil(t, e.resp, "the second turn fits")
	sr.end(t, e, usage(1, 1), 0) // lands as version 2: 2 of 2
	d := newCall("s")
	d.Session = stale
	require.NotNil(t, sr.request(t, d), "d read version 1, but counts the turn saved as version 2")
	require.NotNil(t, sr.begin(t, "s").resp, "a fresh load reads 2 of 2")
	assert.Equal(t, map[string]int64{"turns": 2}, sr.counters(t, "s"))
	assert.Zero(t, sr.counted.calls.Load())
}

// TestStagedReplyBudgets: the tool caps and the streak decided from the
// counters read with the session and the turn's own calls; the save adds
// the calls passed and the streak; a counted call that never reached the
// agent is given back after the save (the one counter call).
func TestStagedReplyBudgets(t *testing.T) {
	sr := newStagedRig(t, Limits{IdenticalCalls: 2}, "Bash=2")
	pt := sr.begin(t, "s")
	d := sr.reply(t, pt, reply(tc("Bash", `{"c":1}`), tc("Read", `{}`), tc("create_new_topic", `{}`)))
	assert.Empty(t, refused(d))
	sr.end(t, pt, usage(1, 1), 0)
	assert.Equal(t, map[string]int64{"calls:Bash": 1, "streak": 1}, sr.counters(t, "s"))

	pt = sr.begin(t, "s")
	r := reply(tc("Read", `{}`), tc("Read", `{}`), tc("Bash", `{"c":2}`), tc("Bash", `{"c":3}`))
	d = sr.reply(t, pt, r)
	assert.Equal(t, []int{1, 3}, sortedKeys(refused(d)), "the third Read in a row (the streak read with the session), the third Bash")
	sr.end(t, pt, usage(1, 1), 0,
		conv.Outcome{Call: r.ToolCalls[0], Fate: conv.FateDelivered},
		conv.Outcome{Call: r.ToolCalls[1], Fate: conv.FateRefused, Hook: Name},
		conv.Outcome{Call: r.ToolCalls[2], Fate: conv.FateRefused, Hook: "intents"},
		conv.Outcome{Call: r.ToolCalls[3], Fate: conv.FateRefused, Hook: Name})
	assert.Equal(t, map[string]int64{"calls:Bash": 1, "streak": 1}, sr.counters(t, "s"),
		"the Bash intents refused is given back; the streak restarted at the last call")
	assert.Equal(t, int64(1), sr.counted.calls.Load(), "one give-back, after the save")

	pt = sr.begin(t, "s")
	d = sr.reply(t, pt, reply(tc("Bash", `{"c":3}`), tc("Bash", `{"c":3}`)))
	assert.Equal(t, []int{1}, sortedKeys(refused(d)), "the third identical Bash call in a row")
}

func sortedKeys(m map[int]string) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestStagedLandedBounded: a session's landed holds are kept at most
// maxLanded deep and dropped after landedGrace once no open request needs
// them (a session saving thousands of turns a second stays cheap).
func TestStagedLandedBounded(t *testing.T) {
	var f flights
	key := state.Key{Tenant: "t", Session: "s"}
	now := time.Now()
	for v := int64(1); v <= 100; v++ {
		r := &reservation{key: key, base: v - 1}
		f.open(r)
		f.hold(r, "turns", 1)
		f.landed(r, v, now)
	}
	require.Len(t, f.by[key].landed, maxLanded)
	assert.Equal(t, map[string]int64{"turns": maxLanded}, f.sum(key, 0), "a very old read counts the landed holds kept")
	assert.Equal(t, map[string]int64{"turns": 1}, f.sum(key, 99))
	f.sweep(now.Add(landedGrace))
	assert.Empty(t, f.by, "dropped after the grace")
}
