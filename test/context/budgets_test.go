package context_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// budgetsOn turns the feature on with set's budgets.
func budgetsOn(set func(c *config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Budgets.Enabled = hooks.OptInOn
		set(c)
	}
}

// budgetStreamModes are the two ways an agent asks.
var budgetStreamModes = []bool{false, true}

func budgetMode(stream bool) string {
	if stream {
		return "stream"
	}
	return "json"
}

// budgetSend posts the agent's next turn and, on a 200, returns the reply as the
// agent reads it (a JSON reply is echoed into the history; a streamed one
// is not: the next turn's user message follows the previous one).
func budgetSend(t *testing.T, a *kit.Agent) (kit.Reply, *http.Response, []byte) {
	t.Helper()
	resp, body := a.Post(t)
	if resp.StatusCode != http.StatusOK {
		return kit.Reply{}, resp, body
	}
	var r kit.Reply
	var err error
	if a.Request.Stream {
		r, err = a.D.ParseStream(body)
	} else {
		r, err = a.D.ParseReply(body)
	}
	require.NoError(t, err, "%s", body)
	return r, resp, body
}

// requireBudget429 checks a budget refusal: 429 in the API's error shape,
// x-should-retry false, and a message with each of want.
func requireBudget429(t *testing.T, d kit.Driver, resp *http.Response, body []byte, want ...string) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	require.NoError(t, d.ErrorShape(http.StatusTooManyRequests, body), "%s", body)
	assert.NotEmpty(t, d.ErrorType(body))
	assert.Equal(t, "false", resp.Header.Get("x-should-retry"))
	for _, w := range want {
		assert.Contains(t, string(body), w)
	}
}

// TestBudgetMaxTurns: with max_turns 2 the third request of a session gets
// 429 in its API's error shape, says what was spent, and never goes
// upstream; another session is not affected; the upstream view of the
// turns that passed stays append-only.
func TestBudgetMaxTurns(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range budgetStreamModes {
			t.Run(d.Name()+"/"+budgetMode(stream), func(t *testing.T) {
				r := newRig(t, rigOptions{Configure: budgetsOn(func(c *config.Config) { c.Budgets.MaxTurns = 2 })})
				a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "turns-" + d.Name()})
				a.Request.Stream = stream
				for i := range 2 {
					r.Mock.Script(mock.Reply{Text: fmt.Sprintf("answer %d", i)})
					a.User(fmt.Sprintf("question %d", i))
					reply, resp, body := budgetSend(t, a)
					require.Equal(t, 200, resp.StatusCode, "%s", body)
					require.Equal(t, fmt.Sprintf("answer %d", i), reply.Text)
				}
				a.User("question 2")
				_, resp, body := budgetSend(t, a)
				requireBudget429(t, d, resp, body, "limit of 2 turns (budgets.max_turns): 2 taken", "Spent so far: 2 turns")
				require.Len(t, r.upstreamBodies(), 2, "the refused request never went upstream")
				bodies := r.upstreamBodies()
				require.Equal(t, -1, kit.PrefixBreak(d, bodies[0], bodies[1]))

				other := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "other-" + d.Name()})
				other.User("hello")
				_, resp, body = budgetSend(t, other)
				require.Equal(t, 200, resp.StatusCode, "%s", body)

				_, sess := kit.Do(t, "GET", r.URL+"/shepherd/v1/sessions/turns-"+d.Name(), "", nil)
				assert.Equal(t, int64(2), gjson.GetBytes(sess, "budgets.turns").Int(), "the sessions API shows the counters: %s", sess)

				evs := r.Events.Of(events.BudgetReached)
				require.Len(t, evs, 1)
				assert.Equal(t, "turns", evs[0].Data["budget"])
				assert.EqualValues(t, 2, evs[0].Data["limit"])
				m := r.metrics(t)
				assert.Equal(t, 1.0, m.Value("shepherd_budget_refusals_total", `budget="turns"`))
			})
		}
	}
}

// TestBudgetMaxTokens: tokens count from the upstream's usage (cache
// reads and writes included); once spent plus a request's estimate passes
// max_tokens, the request gets 429 naming the tokens spent.
func TestBudgetMaxTokens(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range budgetStreamModes {
			t.Run(d.Name()+"/"+budgetMode(stream), func(t *testing.T) {
				r := newRig(t, rigOptions{Configure: budgetsOn(func(c *config.Config) { c.Budgets.MaxTokens = 1500 })})
				a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "tokens-" + d.Name()})
				a.Request.Stream, a.Request.Limit = stream, 200
				// Each turn: 600 input + 300 cache read + 100 cache write + 100 output = 1100.
				u := mock.Usage{Input: 600, CacheRead: 300, CacheWrite: 100, Output: 100}
				r.Mock.Script(mock.Reply{Text: "one", Usage: u}, mock.Reply{Text: "two", Usage: u})
				a.User("first")
				_, resp, body := budgetSend(t, a)
				require.Equal(t, 200, resp.StatusCode, "%s", body)
				a.User("second")
				_, resp, body = budgetSend(t, a)
				require.Equal(t, 200, resp.StatusCode, "1100 spent + an estimate of ~210 fit 1500: %s", body)
				a.User("third")
				_, resp, body = budgetSend(t, a)
				requireBudget429(t, d, resp, body, "limit of 1500 tokens (budgets.max_tokens): 2200 spent", "Spent so far: 2 turns, 2200 tokens")
				require.Len(t, r.upstreamBodies(), 2)
			})
		}
	}
}

// budgetReadTools are the tools the call-cap tests declare.
var budgetReadTools = []kit.Tool{kit.ReadTool}

// TestBudgetCallCaps: a call past its tool's cap (tool_calls) or repeated
// past max_identical_calls is refused: the agent never sees it, the model
// reads the reason as the call's result in the follow-up shepherd sends,
// and the agent gets the model's answer to that.
func TestBudgetCallCaps(t *testing.T) {
	cases := []struct {
		name      string
		configure func(*config.Config)
		second    string // the second call's arguments (the first is {"path":"a.go"})
		reason    string
		budget    string
	}{
		{"tool_calls", func(c *config.Config) { c.Budgets.ToolCalls = []string{"Read=1"} }, `{"path":"b.go"}`,
			"budget: Read may be called at most 1 times in this session; it was called 1 times.", "tool_calls"},
		{"identical_calls", func(c *config.Config) { c.Budgets.MaxIdenticalCalls = 1 }, `{"path":"a.go"}`,
			"loop: this exact call was made 1 times in a row;", "identical_calls"},
	}
	for _, tc := range cases {
		for _, d := range kit.Drivers() {
			for _, stream := range budgetStreamModes {
				t.Run(tc.name+"/"+d.Name()+"/"+budgetMode(stream), func(t *testing.T) {
					r := newRig(t, rigOptions{Configure: budgetsOn(tc.configure)})
					a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "calls-" + d.Name()})
					a.Request.Tools = budgetReadTools
					r.Mock.Script(
						mock.Reply{ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "Read", Args: `{"path":"a.go"}`}}},
						mock.Reply{ToolCalls: []mock.ToolCall{{ID: "call_2", Name: "Read", Args: tc.second}}},
						mock.Reply{Text: "I will stop reading."},
					)
					a.User("read the files")
					reply, resp, body := budgetSend(t, a)
					require.Equal(t, 200, resp.StatusCode, "%s", body)
					require.Len(t, reply.Calls, 1, "the first call reaches the agent")
					id := reply.Calls[0].ID
					a.ToolResult(id, "Read", "package a")

					a.Request.Stream = stream
					reply, resp, body = budgetSend(t, a)
					require.Equal(t, 200, resp.StatusCode, "%s", body)
					assert.Empty(t, reply.Calls, "the agent never sees the refused call")
					assert.Equal(t, "I will stop reading.", reply.Text)

					bodies := r.upstreamBodies()
					require.Len(t, bodies, 3, "the agent's two requests and shepherd's follow-up")
					var result string
					for _, it := range d.ToolHistory(bodies[2]) {
						if !it.Call && it.ID != id && it.Content != "package a" {
							result = it.Content
						}
					}
					assert.Contains(t, result, tc.reason, "the model reads why in the follow-up")
					require.Equal(t, -1, kit.PrefixBreak(d, bodies[1], bodies[2]), "the follow-up extends the request")

					evs := r.Events.Of(events.BudgetReached)
					require.Len(t, evs, 1)
					assert.Equal(t, tc.budget, evs[0].Data["budget"])
					assert.Equal(t, "Read", evs[0].Data["tool"])
					assert.Equal(t, 1.0, r.metrics(t).Value("shepherd_budget_refusals_total", `budget="`+tc.budget+`"`))
				})
			}
		}
	}
}

// TestBudgetHeaderOptIn: with enabled header only the requests naming
// budgets in X-Shepherd-Features count and are refused.
func TestBudgetHeaderOptIn(t *testing.T) {
	d := kit.Drivers()[0]
	r := newRig(t, rigOptions{Configure: func(c *config.Config) {
		c.Budgets.Enabled, c.Budgets.MaxTurns = hooks.OptInHeader, 1
	}})
	plain := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "hdr"})
	for range 3 {
		plain.User("q")
		_, resp, body := budgetSend(t, plain)
		require.Equal(t, 200, resp.StatusCode, "not opted in: %s", body)
	}
	opted := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "hdr", hooks.FeaturesHeader: "format, Budgets"})
	opted.User("q")
	_, resp, body := budgetSend(t, opted)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	opted.User("q2")
	_, resp, body = budgetSend(t, opted)
	requireBudget429(t, d, resp, body, "limit of 1 turns")
}

// budgetRedisStore is a Redis store on the test server under a key prefix of its
// own, its keys deleted when the test ends.
func budgetRedisStore(t *testing.T, prefix string) *state.Redis {
	t.Helper()
	url := kit.RedisURL(t)
	st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Hour, Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// budgetKeyPrefix returns a key prefix for this test and deletes its keys at
// the end.
func budgetKeyPrefix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "shepherd-budgets-" + hex.EncodeToString(b)
	opts, err := redis.ParseURL(kit.RedisURL(t))
	require.NoError(t, err)
	raw := redis.NewClient(opts)
	t.Cleanup(func() {
		defer raw.Close()
		ctx := context.Background()
		keys, _ := raw.Keys(ctx, prefix+":*").Result()
		if len(keys) > 0 {
			raw.Del(ctx, keys...)
		}
	})
	return prefix
}

// TestBudgetReplicasBounded: two replicas (one mock, each its own Redis
// store on one server) serving one session concurrently. The counters read
// with the session decide each request, and the turn's save adds its spend
// (no round trip of their own), so concurrent requests on different
// replicas may each take the last turn: each replica passes at most
// max_turns (what it holds in flight is exact), so together at most twice
// that; the counters count every turn that passed, exactly, and once they
// are saved every replica refuses the next request.
func TestBudgetReplicasBounded(t *testing.T) {
	const maxTurns, requests = 5, 24
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			prefix := budgetKeyPrefix(t)
			m := kit.StartMock(t, mock.Options{})
			var rigs []*rig
			var stores []*state.Redis
			for range 2 {
				st := budgetRedisStore(t, prefix)
				stores = append(stores, st)
				rigs = append(rigs, newRig(t, rigOptions{Shared: m, Store: st,
					Configure: budgetsOn(func(c *config.Config) { c.Budgets.MaxTurns = maxTurns })}))
			}
			session := "shared-" + d.Name()
			var wg sync.WaitGroup
			var mu sync.Mutex
			status := map[int]int{}
			for i := range requests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := kit.NewAgent(d, rigs[i%2].URL, map[string]string{"X-Session-Id": session})
					a.User(fmt.Sprintf("q%d", i))
					resp, body := a.Post(t)
					if resp.StatusCode == 429 {
						assert.NoError(t, d.ErrorShape(429, body))
					}
					mu.Lock()
					status[resp.StatusCode]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			passed := status[200]
			assert.Equal(t, requests, passed+status[429], "every request passed or was refused: %v", status)
			assert.GreaterOrEqual(t, passed, maxTurns, "the budget's turns pass")
			assert.LessOrEqual(t, passed, 2*maxTurns, "over-spend bounded: each replica passes at most max_turns")
			assert.Len(t, m.Requests(), passed, "only the requests that passed went upstream")
			tenant := budgetTenant(t, stores[0], session)
			got, err := stores[0].ReadCounters(context.Background(), state.Key{Tenant: tenant, Session: session})
			require.NoError(t, err)
			assert.Equal(t, int64(passed), got["turns"], "every turn that passed is counted, once")
			for i, r := range rigs {
				a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": session})
				a.User(fmt.Sprintf("after%d", i))
				resp, body := a.Post(t)
				assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "replica %d refuses once the turns are saved: %s", i, body)
			}
		})
	}
}

// budgetTenant finds the tenant the session was stored under.
func budgetTenant(t *testing.T, st *state.Redis, session string) string {
	t.Helper()
	sums, err := st.List(context.Background(), "", 0)
	require.NoError(t, err)
	for _, s := range sums {
		if s.ID == session {
			return s.Tenant
		}
	}
	t.Fatalf("session %s not stored", session)
	return ""
}

// budgetSplitStore is a memory session store whose budget counters live in
// another Counters (a Redis that is down). It embeds the Store interface,
// not the memory store, so it does not read or stage counters with the
// session (state.CounterPrefetcher): every change is a Counters call.
type budgetSplitStore struct {
	state.Store
	c state.Counters
}

func (s budgetSplitStore) Reserve(ctx context.Context, k state.Key, name string, n, limit int64) (int64, bool, error) {
	return s.c.Reserve(ctx, k, name, n, limit)
}
func (s budgetSplitStore) Add(ctx context.Context, k state.Key, name string, n int64) (int64, error) {
	return s.c.Add(ctx, k, name, n)
}
func (s budgetSplitStore) Streak(ctx context.Context, k state.Key, name, sig string) (int64, error) {
	return s.c.Streak(ctx, k, name, sig)
}
func (s budgetSplitStore) ReadCounters(ctx context.Context, k state.Key) (map[string]int64, error) {
	return s.c.ReadCounters(ctx, k)
}

// TestBudgetRedisDown: counters that cannot be reached let every request
// pass (fail-open), counted in shepherd_budget_errors_total; a whole
// Redis store that is down passes requests through as well.
func TestBudgetRedisDown(t *testing.T) {
	deadURL := "redis://" + kit.FreeAddr(t) + "/0"
	dead, err := state.NewRedis(state.RedisOptions{URL: deadURL, Timeout: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dead.Close() })
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			mem := state.NewMemory(state.MemoryOptions{TTL: time.Hour})
			t.Cleanup(func() { _ = mem.Close() })
			r := newRig(t, rigOptions{Store: budgetSplitStore{Store: mem, c: dead},
				Configure: budgetsOn(func(c *config.Config) {
					c.Budgets.MaxTurns, c.Budgets.MaxTokens, c.Budgets.MaxIdenticalCalls = 1, 10, 1
					c.Budgets.ToolCalls = []string{"*=1"}
				})})
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "down-" + d.Name()})
			for i := range 3 {
				a.User(fmt.Sprintf("q%d", i))
				_, resp, body := budgetSend(t, a)
				require.Equal(t, 200, resp.StatusCode, "fail-open: %s", body)
			}
			assert.Positive(t, r.metrics(t).Value("shepherd_budget_errors_total"))
			assert.Zero(t, r.metrics(t).Sum("shepherd_budget_refusals_total"))

			whole := newRig(t, rigOptions{Store: dead, Configure: budgetsOn(func(c *config.Config) { c.Budgets.MaxTurns = 1 })})
			b := kit.NewAgent(d, whole.URL, map[string]string{"X-Session-Id": "down2-" + d.Name()})
			for i := range 2 {
				b.User(fmt.Sprintf("q%d", i))
				_, resp, body := budgetSend(t, b)
				require.Equal(t, 200, resp.StatusCode, "the store is down: pass-through: %s", body)
			}
		})
	}
}
