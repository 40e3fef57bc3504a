package turn

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/pricing"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// usageMetrics records the usage the engine reports, besides the counts.
type usageMetrics struct {
	countingMetrics
	mu   sync.Mutex
	seen []string
	cost float64
}

func (m *usageMetrics) Usage(route, model string, u conv.Usage, cost float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = append(m.seen, route+"/"+model)
	m.cost += cost
}

// pricedReply is an Anthropic reply of model with cache counts.
func pricedReply(model, stop, text string, calls ...string) string {
	r := reply(stop, text, calls...)
	r = strings.Replace(r, `"model":"m"`, `"model":"`+model+`"`, 1)
	return strings.Replace(r, `"usage":{"input_tokens":10,"output_tokens":5}`,
		`"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":20000,"cache_creation_input_tokens":4000}`, 1)
}

func runCall(t *testing.T, e *Engine, call hooks.Call, chain *hooks.Chain, first string, more ...string) {
	t.Helper()
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(agentRequest))
	require.NoError(t, err)
	cc, _ := rewrite.Continuer(codec)
	tn, st := e.Begin(context.Background(), Request{
		Call: call, Chain: chain, Codec: codec, TurnCodec: codec, Continuer: cc,
		View: view, Body: []byte(agentRequest),
	})
	require.NotNil(t, tn)
	require.Nil(t, st.Short)
	require.NoError(t, tn.Run(context.Background(), &scriptWriter{replies: [][]byte{[]byte(first)}}, &scriptSender{replies: more}))
}

// Each turn adds the tokens of every round, their cost, the model and the
// agent to the session in its save; a side request adds its tokens and
// cost but is no request of the session and does not change its model.
func TestSessionUsage(t *testing.T) {
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	m := &usageMetrics{}
	e := New(Options{Store: store, Metrics: m, Limits: Limits{MaxFollowups: 4, MaxRefusalRounds: 4},
		Prices: pricing.Builtin(), SessionFor: func(fp string) string { return "fp-" + fp }})
	chain := hooks.NewChain(policyHook{})
	call := hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1", Agent: "claude-code"}

	// Two rounds: a refused call, then the answer.
	runCall(t, e, call, chain, pricedReply("claude-sonnet-4-5-20250929", "tool_use", "", "rm"),
		pricedReply("claude-sonnet-4-5-20250929", "end_turn", "done"))
	sess, err := store.Get(context.Background(), state.Key{Tenant: "t", Session: "s1"})
	require.NoError(t, err)
	// Per round: 1000*3 + 100*15 + 20000*0.30 + 4000*3.75 = 25500 µ$.
	want := state.Usage{Turns: 1, InputTokens: 2000, OutputTokens: 200, CacheReadTokens: 40000, CacheWriteTokens: 8000, CostUSD: 2 * 0.0255}
	require.InDelta(t, want.CostUSD, sess.Usage.CostUSD, 1e-9)
	sess.Usage.CostUSD = want.CostUSD
	require.Equal(t, want, sess.Usage)
	require.Equal(t, "claude-sonnet-4-5-20250929", sess.Model)
	require.Equal(t, "claude-code", sess.Agent)
	require.EqualValues(t, 1, sess.Requests)

	// A side request (a title call on a cheaper model) changes nothing else.
	side := call
	side.Side = "no_tools"
	runCall(t, e, side, hooks.NewChain(), pricedReply("claude-haiku-4-5", "end_turn", "Title"))
	sess, err = store.Get(context.Background(), state.Key{Tenant: "t", Session: "s1"})
	require.NoError(t, err)
	require.EqualValues(t, 2, sess.Usage.Turns)
	require.EqualValues(t, 3000, sess.Usage.InputTokens)
	require.InDelta(t, 2*0.0255+0.0085, sess.Usage.CostUSD, 1e-9, "haiku: 1000*1 + 100*5 + 20000*0.1 + 4000*1.25 µ$")
	require.EqualValues(t, 1, sess.Requests, "a side request is no request of the session")
	require.Equal(t, "claude-sonnet-4-5-20250929", sess.Model, "a side request's model is not the session's")

	require.Equal(t, []string{"messages/claude-sonnet-4-5-20250929", "messages/claude-haiku-4-5"}, m.seen)
	require.InDelta(t, 2*0.0255+0.0085, m.cost, 1e-9)
}

// Without prices, or for an unknown model, tokens are counted and the cost
// stays 0; the model falls back to the request's when the reply names none.
func TestSessionUsageUnpriced(t *testing.T) {
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	e := New(Options{Store: store, Metrics: &countingMetrics{}, Limits: Limits{MaxFollowups: 4, MaxRefusalRounds: 4},
		SessionFor: func(fp string) string { return "fp-" + fp }})
	runCall(t, e, hooks.Call{Route: "messages", Tenant: "t", SessionID: "s2"}, hooks.NewChain(),
		strings.Replace(reply("end_turn", "hi"), `"model":"m",`, "", 1))
	sess, err := store.Get(context.Background(), state.Key{Tenant: "t", Session: "s2"})
	require.NoError(t, err)
	require.Equal(t, state.Usage{Turns: 1, InputTokens: 10, OutputTokens: 5}, sess.Usage)
	require.Equal(t, "m", sess.Model, "the request's model")
	require.Empty(t, sess.Agent)
}

// A side request never creates a session for its usage alone.
func TestSideUsageCreatesNoSession(t *testing.T) {
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	e := New(Options{Store: store, Metrics: &usageMetrics{}, Prices: pricing.Builtin(),
		SessionFor: func(fp string) string { return "fp-" + fp }})
	runCall(t, e, hooks.Call{Route: "messages", Tenant: "t", SessionID: "s3", Side: "no_tools"}, hooks.NewChain(),
		pricedReply("claude-haiku-4-5", "end_turn", "Title"))
	_, err := store.Get(context.Background(), state.Key{Tenant: "t", Session: "s3"})
	require.ErrorIs(t, err, state.ErrNotFound)
}

// The outcome hooks get the turn's cost, priced as the session's usage
// totals price it (every round at the model that answered).
func TestOutcomeCost(t *testing.T) {
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	e := New(Options{Store: store, Metrics: &countingMetrics{}, Limits: Limits{MaxFollowups: 4, MaxRefusalRounds: 4},
		Prices: pricing.Builtin(), SessionFor: func(fp string) string { return "fp-" + fp }})
	oh := &outcomeHook{}
	call := hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1"}
	runCall(t, e, call, hooks.NewChain(policyHook{}, oh), pricedReply("claude-sonnet-4-5-20250929", "tool_use", "", "rm"),
		pricedReply("claude-sonnet-4-5-20250929", "end_turn", "done"))
	require.Len(t, oh.got, 1)
	require.InDelta(t, 2*0.0255, oh.got[0].CostUSD, 1e-9)

	oh.got = nil
	runCall(t, e, call, hooks.NewChain(oh), pricedReply("unknown-model", "end_turn", "done"))
	require.Len(t, oh.got, 1)
	require.Zero(t, oh.got[0].CostUSD, "an unpriced model costs 0")
}
