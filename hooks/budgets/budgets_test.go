package budgets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

var ctx = context.Background()

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

type harness struct {
	h     *Hook
	store *state.Memory
	ev    *events.Recorder
	m     *metrics
	now   time.Time
}

func newHarness(t *testing.T, lim Limits, rules ...string) *harness {
	t.Helper()
	mem := state.NewMemory(state.MemoryOptions{TTL: time.Hour})
	t.Cleanup(func() { _ = mem.Close() })
	return newHarnessWith(t, mem, lim, rules...)
}

func newHarnessWith(t *testing.T, c state.Counters, lim Limits, rules ...string) *harness {
	t.Helper()
	tr, err := ParseToolRules(rules)
	require.NoError(t, err)
	hs := &harness{ev: &events.Recorder{}, m: newMetrics(), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	require.NoError(t, hs.m.register(prometheus.NewRegistry()))
	hs.store, _ = c.(*state.Memory)
	hs.h = New(Options{Scope: hooks.Scope{Enabled: hooks.OptInOn}, Limits: lim, Tools: tr, Owned: []string{"create_new_topic"},
		Counters: c, Events: hs.ev, Metrics: hs.m, Now: func() time.Time { return hs.now }})
	return hs
}

var seq int

func newCall(session string) *hooks.Call {
	seq++
	return &hooks.Call{Tenant: "t", SessionID: session, RequestID: fmt.Sprint("r", seq), Route: "messages"}
}

// smallRequest estimates to 1 + 100 = 101 tokens.
func smallRequest() *conv.Request {
	return &conv.Request{MaxOutputTokens: 100, HasMaxOutputTokens: true,
		Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "hi"}}}}}
}

func (hs *harness) request(t *testing.T, call *hooks.Call) *hooks.Response {
	t.Helper()
	edits, resp, err := hs.h.OnRequest(ctx, call, smallRequest())
	require.NoError(t, err)
	assert.True(t, edits.Empty(), "budgets never edit a request")
	return resp
}

func (hs *harness) counters(t *testing.T, session string) map[string]int64 {
	t.Helper()
	got, err := hs.h.o.Counters.ReadCounters(ctx, state.Key{Tenant: "t", Session: session})
	require.NoError(t, err)
	return got
}

func usage(in, out int64) conv.Usage { return conv.Usage{InputTokens: in, OutputTokens: out} }

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *conv.Request
		want int64
	}{
		{"nil", nil, 0},
		{"empty", &conv.Request{}, 1},
		{"text and output limit", smallRequest(), 101},
		{"system, calls and results", &conv.Request{System: strings.Repeat("s", 400), Messages: []conv.Message{
			{Role: conv.RoleAssistant, Blocks: []conv.Block{{Kind: conv.BlockToolCall, Args: []byte(strings.Repeat("a", 400))}}},
			{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockToolResult, Text: strings.Repeat("r", 800)}}},
		}}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, EstimateTokens(tc.req)) })
	}
}

// TestRequestBudgets: each request budget refuses with 429 once reached,
// naming the budget, the limit and the spend, and gives back what the
// request reserved before the budget that refused it.
func TestRequestBudgets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lim     Limits
		spend   conv.Usage // per turn
		cost    float64    // per turn
		pass    int        // turns that pass
		budget  string
		message []string
	}{
		{"turns", Limits{Turns: 2}, usage(10, 5), 0, 2, budgetTurns,
			[]string{"its limit of 2 turns (budgets.max_turns): 2 taken"}},
		{"tokens", Limits{Tokens: 2050}, usage(900, 100), 0, 2, budgetTokens,
			[]string{"its limit of 2050 tokens (budgets.max_tokens): 2000 spent, this request needs about 101 more"}},
		{"cost", Limits{CostMicros: 25_000}, usage(10, 5), 0.01, 3, budgetCost,
			[]string{"its cost limit of $0.0250 (budgets.max_cost_usd): $0.0300 spent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, Limits{Turns: tc.lim.Turns, Tokens: tc.lim.Tokens, CostMicros: tc.lim.CostMicros})
			for i := range tc.pass {
				call := newCall("s")
				require.Nil(t, hs.request(t, call), "request %d passes", i)
				require.NoError(t, hs.h.OnOutcome(ctx, call, &conv.TurnOutcome{Usage: tc.spend, CostUSD: tc.cost}))
			}
			before := hs.counters(t, "s")
			refusedCall := newCall("s")
			refusedCall.Session = &state.Session{Requests: 7, Usage: state.Usage{InputTokens: 10, CacheReadTokens: 90, OutputTokens: 5, CostUSD: 0.5}}
			resp := hs.request(t, refusedCall)
			require.NotNil(t, resp)
			assert.Contains(t, resp.Message, "Spent so far: 7 turns, 105 tokens, $0.5000.", "the session's usage totals")
			assert.Equal(t, 429, resp.Status)
			assert.Equal(t, map[string]string{"x-should-retry": "false"}, resp.Headers)
			for _, m := range tc.message {
				assert.Contains(t, resp.Message, m)
			}
			assert.Equal(t, before, hs.counters(t, "s"), "a refused request leaves the counters as they were")
			assert.Equal(t, 1.0, value(t, hs.m.refusals.WithLabelValues(tc.budget)))
			require.Len(t, hs.ev.All(), 1)
			assert.Equal(t, events.BudgetReached, hs.ev.All()[0].Type)
			assert.Equal(t, tc.budget, hs.ev.All()[0].Data["budget"])
		})
	}
}

// TestRefusalGivesBackEarlierReservations: a request refused by its token
// budget gives back the turn it reserved.
func TestRefusalGivesBackEarlierReservations(t *testing.T) {
	hs := newHarness(t, Limits{Turns: 5, Tokens: 50})
	resp := hs.request(t, newCall("s"))
	require.NotNil(t, resp, "101 estimated tokens do not fit 50")
	assert.Contains(t, resp.Message, "limit of 50 tokens")
	assert.Equal(t, map[string]int64{"turns": 0}, hs.counters(t, "s"))
}

// TestOutcomeSettles: the outcome replaces the estimate with the real
// spend; an opening request's spend moves to the session it was saved
// under; a side request takes no turn but its tokens count.
func TestOutcomeSettles(t *testing.T) {
	hs := newHarness(t, Limits{Turns: 10, Tokens: 100_000, CostMicros: 1_000_000})
	call := newCall("s")
	require.Nil(t, hs.request(t, call))
	assert.Equal(t, map[string]int64{"turns": 1, "tokens": 101, "cost_micros": 1}, hs.counters(t, "s"), "reserved")
	out := &conv.TurnOutcome{Usage: conv.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 300, CacheWriteTokens: 4000}, CostUSD: 0.0123456}
	require.NoError(t, hs.h.OnOutcome(ctx, call, out))
	assert.Equal(t, map[string]int64{"turns": 1, "tokens": 4330, "cost_micros": 12346}, hs.counters(t, "s"), "committed")

	side := newCall("s")
	side.Side = "no_tools"
	require.Nil(t, hs.request(t, side))
	require.NoError(t, hs.h.OnOutcome(ctx, side, &conv.TurnOutcome{Usage: usage(70, 30)}))
	assert.Equal(t, map[string]int64{"turns": 1, "tokens": 4430, "cost_micros": 12346}, hs.counters(t, "s"), "a side request's tokens count, it takes no turn")

	open := newCall("fresh-id")
	require.Nil(t, hs.request(t, open))
	open.Saved = &state.Session{ID: "continuation", Tenant: "t"}
	require.NoError(t, hs.h.OnOutcome(ctx, open, &conv.TurnOutcome{Usage: usage(40, 2)}))
	assert.Equal(t, map[string]int64{"turns": 0, "tokens": 0, "cost_micros": 0}, hs.counters(t, "fresh-id"))
	assert.Equal(t, map[string]int64{"turns": 1, "tokens": 42}, hs.counters(t, "continuation"), "the opening turn counts where the conversation goes on")
}

// TestUnansweredReservationsExpire: a request that gets no outcome gives
// back its reservation after holdFor; an outcome that comes later adds its
// whole spend, the turn included, once.
func TestUnansweredReservationsExpire(t *testing.T) {
	hs := newHarness(t, Limits{Turns: 10, Tokens: 1000})
	late := newCall("s")
	require.Nil(t, hs.request(t, late))
	require.Nil(t, hs.request(t, newCall("s"))) // never answered
	assert.Equal(t, map[string]int64{"turns": 2, "tokens": 202}, hs.counters(t, "s"))
	hs.now = hs.now.Add(holdFor + time.Minute)
	require.Nil(t, hs.request(t, newCall("s")))
	assert.Equal(t, map[string]int64{"turns": 1, "tokens": 101}, hs.counters(t, "s"), "the two expired reservations were given back")
	require.NoError(t, hs.h.OnOutcome(ctx, late, &conv.TurnOutcome{Usage: usage(5, 5)}))
	assert.Equal(t, map[string]int64{"turns": 2, "tokens": 111}, hs.counters(t, "s"), "the late outcome counts its turn and tokens")
}

func reply(calls ...conv.ToolCall) *conv.Reply {
	for i := range calls {
		calls[i].Index = i
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprint("call_", seq, "_", i)
		}
	}
	return &conv.Reply{ToolCalls: calls, Stop: conv.StopToolUse}
}

func tc(name, args string) conv.ToolCall { return conv.ToolCall{Name: name, Args: []byte(args)} }

// refused returns the refused calls' indices and reasons.
func refused(d hooks.ReplyDecision) map[int]string {
	out := map[int]string{}
	for _, c := range d.Calls {
		if c.Verdict == conv.Refuse {
			out[c.CallIndex] = c.Result
		}
	}
	return out
}

// TestToolCaps: each capped tool passes N calls per session, then every
// call of it is refused with the reason; the first matching rule applies;
// shepherd's own tools are never capped.
func TestToolCaps(t *testing.T) {
	hs := newHarness(t, Limits{}, "Bash=2", "Re*=1", "*=3")
	type step struct {
		calls   []conv.ToolCall
		refused []int
	}
	for i, s := range []step{
		{[]conv.ToolCall{tc("Bash", `{"c":1}`), tc("Read", `{}`), tc("create_new_topic", `{}`)}, nil},
		{[]conv.ToolCall{tc("Bash", `{"c":2}`), tc("Bash", `{"c":3}`), tc("Read", `{"x":1}`)}, []int{1, 2}},
		{[]conv.ToolCall{tc("Grep", `{}`), tc("Grep", `{}`), tc("Grep", `{}`), tc("Grep", `{}`)}, []int{3}},
		{[]conv.ToolCall{tc("create_new_topic", `{}`), tc("create_new_topic", `{}`)}, nil},
	} {
		call := newCall("s")
		d, err := hs.h.OnReply(ctx, call, reply(s.calls...))
		require.NoError(t, err)
		got := refused(d)
		var idx []int
		for j := range s.calls {
			if _, ok := got[j]; ok {
				idx = append(idx, j)
			}
		}
		assert.Equal(t, s.refused, idx, "step %d", i)
	}
	d, err := hs.h.OnReply(ctx, newCall("s"), reply(tc("Bash", `{"c":9}`)))
	require.NoError(t, err)
	assert.Equal(t, "budget: Bash may be called at most 2 times in this session; it was called 2 times. "+
		"This call was not run. Finish the task without Bash, or tell the user the budget is spent.", refused(d)[0])
	assert.Equal(t, Name, d.Calls[0].Rule)
	assert.Equal(t, 4.0, value(t, hs.m.refusals.WithLabelValues(budgetToolCalls)))
	last := hs.ev.All()[len(hs.ev.All())-1]
	assert.Equal(t, budgetToolCalls, last.Data["budget"])
	assert.Equal(t, "Bash", last.Data["tool"])
	assert.Equal(t, int64(2), last.Data["limit"])
	assert.Equal(t, int64(2), last.Data["spent"])
	assert.NotEmpty(t, last.Data["call_id"])
}

// TestIdenticalCalls: the same call (tool and argument bytes) passes
// max_identical_calls times in a row, then is refused as a loop; another
// call in between restarts the streak.
func TestIdenticalCalls(t *testing.T) {
	hs := newHarness(t, Limits{IdenticalCalls: 2})
	for i, s := range []struct {
		call    conv.ToolCall
		refused bool
	}{
		{tc("Bash", `{"cmd":"ls"}`), false},
		{tc("Bash", `{"cmd":"ls"}`), false},
		{tc("Bash", `{"cmd":"ls"}`), true},
		{tc("Bash", `{"cmd":"ls"}`), true},
		{tc("Bash", `{"cmd": "ls"}`), false}, // other bytes: another call
		{tc("Bash", `{"cmd":"ls"}`), false},
		{tc("Shell", `{"cmd":"ls"}`), false}, // other tool
	} {
		d, err := hs.h.OnReply(ctx, newCall("s"), reply(s.call))
		require.NoError(t, err)
		reason, ok := refused(d)[0]
		require.Equal(t, s.refused, ok, "step %d", i)
		if ok {
			assert.True(t, strings.HasPrefix(reason, fmt.Sprintf("loop: this exact call was made %d times in a row;", i)), reason)
		}
	}
	assert.Equal(t, 2.0, value(t, hs.m.refusals.WithLabelValues(budgetIdentical)))
}

// TestUndeliveredCallsGivenBack: a counted call that never reached the
// agent (another hook refused it, dropped, undelivered) is given back at
// the outcome; a delivered one and one budgets refused are not.
func TestUndeliveredCallsGivenBack(t *testing.T) {
	hs := newHarness(t, Limits{}, "*=10")
	call := newCall("s")
	r := reply(tc("A", `1`), tc("B", `2`), tc("C", `3`), tc("D", `4`))
	_, err := hs.h.OnReply(ctx, call, r)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"calls:A": 1, "calls:B": 1, "calls:C": 1, "calls:D": 1}, hs.counters(t, "s"))
	out := &conv.TurnOutcome{Calls: []conv.Outcome{
		{Call: r.ToolCalls[0], Fate: conv.FateDelivered},
		{Call: r.ToolCalls[1], Fate: conv.FateRefused, Hook: "intents"},
		{Call: r.ToolCalls[2], Fate: conv.FateDropped},
		{Call: r.ToolCalls[3], Fate: conv.FateUndelivered},
	}}
	require.NoError(t, hs.h.OnOutcome(ctx, call, out))
	assert.Equal(t, map[string]int64{"calls:A": 1, "calls:B": 0, "calls:C": 0, "calls:D": 0}, hs.counters(t, "s"))
}

// TestScope: with enabled header, only requests naming budgets are
// counted; a request without a session passes.
func TestScope(t *testing.T) {
	hs := newHarness(t, Limits{Turns: 1})
	hs.h.o.Scope = hooks.Scope{Enabled: hooks.OptInHeader}
	for range 3 {
		require.Nil(t, hs.request(t, newCall("s")), "not opted in")
	}
	opted := newCall("s")
	opted.Features = []string{"format", Name}
	require.Nil(t, hs.request(t, opted))
	opted = newCall("s")
	opted.Features = []string{Name}
	require.NotNil(t, hs.request(t, opted))
	hs.h.o.Scope = hooks.Scope{Enabled: hooks.OptInOn}
	require.Nil(t, hs.request(t, newCall("")), "no session: nothing to count")
}

// failing is a Counters whose every call fails (Redis down).
type failing struct{}

var errDown = errors.New("redis: connection refused")

func (failing) Reserve(context.Context, state.Key, string, int64, int64) (int64, bool, error) {
	return 0, false, errDown
}
func (failing) Add(context.Context, state.Key, string, int64) (int64, error) { return 0, errDown }
func (failing) Streak(context.Context, state.Key, string, string) (int64, error) {
	return 0, errDown
}
func (failing) ReadCounters(context.Context, state.Key) (map[string]int64, error) {
	return nil, errDown
}

// TestFailOpen: counters that fail let requests and calls pass, counted.
func TestFailOpen(t *testing.T) {
	hs := newHarnessWith(t, failing{}, Limits{Turns: 1, Tokens: 1, CostMicros: 1, IdenticalCalls: 1}, "*=1")
	for range 3 {
		call := newCall("s")
		require.Nil(t, hs.request(t, call))
		d, err := hs.h.OnReply(ctx, call, reply(tc("Bash", `{}`), tc("Bash", `{}`)))
		require.NoError(t, err)
		assert.Empty(t, d.Calls)
		require.NoError(t, hs.h.OnOutcome(ctx, call, &conv.TurnOutcome{Usage: usage(5, 5)}))
	}
	assert.Positive(t, value(t, hs.m.errors))
	assert.Zero(t, value(t, hs.m.refusals.WithLabelValues(budgetTurns)))
}

// BenchmarkOnRequest: a request's reservations (turn, tokens, cost) on the
// memory store and their settlement by the outcome.
func BenchmarkOnRequest(b *testing.B) {
	mem := state.NewMemory(state.MemoryOptions{TTL: time.Hour})
	defer mem.Close()
	h := New(Options{Scope: hooks.Scope{Enabled: hooks.OptInOn}, Limits: Limits{Turns: 1 << 40, Tokens: 1 << 50, CostMicros: 1 << 50},
		Counters: mem, Metrics: newMetrics()})
	req := smallRequest()
	out := &conv.TurnOutcome{Usage: usage(100, 10), CostUSD: 0.001}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		call := &hooks.Call{Tenant: "t", SessionID: "s", RequestID: fmt.Sprint(i)}
		if _, resp, _ := h.OnRequest(ctx, call, req); resp != nil {
			b.Fatal("refused")
		}
		_ = h.OnOutcome(ctx, call, out)
	}
}
