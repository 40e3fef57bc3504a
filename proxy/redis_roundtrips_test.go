package proxy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// eventTrip reports whether a round trip only writes the event streams
// (EventLog: XADD and its trimming), which the events feed does off the
// request path.
func eventTrip(names []string) bool {
	return !slices.ContainsFunc(names, func(n string) bool { return n != "XADD" && n != "XTRIM" && n != "PEXPIRE" && n != "EXPIRE" }) &&
		slices.Contains(names, "XADD")
}

// countedRedisStore is a Redis store on the test server, under a fresh key
// prefix (shepherd-<tag>-…, removed at the end), whose client counts its
// round trips in rt.
func countedRedisStore(t *testing.T, tag string) (st *state.Redis, rt *kit.RedisTrips) {
	return countedRedisStoreWith(t, tag, state.RedisOptions{})
}

// countedRedisStoreWith is countedRedisStore with more options (the
// connection, TTL and timeout are set here, and the prefix unless given:
// a given prefix is the caller's to remove).
func countedRedisStoreWith(t *testing.T, tag string, o state.RedisOptions) (st *state.Redis, rt *kit.RedisTrips) {
	t.Helper()
	url := kit.RedisURL(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	rt = &kit.RedisTrips{}
	client.AddHook(rt)
	if o.KeyPrefix == "" {
		prefix := fmt.Sprintf("shepherd-%s-%d", tag, time.Now().UnixNano())
		t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
		o.KeyPrefix = prefix
	}
	o.Client, o.TTL, o.Timeout = client, time.Minute, time.Second
	st, err = state.NewRedis(o)
	require.NoError(t, err)
	return st, rt
}

// TestRedisRoundTripsPerTurn counts the round trips a session's later turn
// makes to the Redis store with the default features on (topics,
// recovery, edits): the load before the hooks and the compare-and-set save
// after the reply, each one round trip (the save's index update rides in
// the save's pipeline). Events the feed writes to the store's streams are
// counted apart: they are written off the request path.
func TestRedisRoundTripsPerTurn(t *testing.T) {
	st, rt := countedRedisStore(t, "rt")
	// The feed harness wires the events publisher, as shepherd runs.
	h := newFeedHarness(t, feedOptions{Store: st, Config: func(c *config.Config) {
		d := config.Defaults()
		c.Topics.Enabled, c.Recovery.Enabled, c.Edits.Enabled = d.Topics.Enabled, d.Recovery.Enabled, d.Edits.Enabled
	}})
	hdr := anthropicHeaders()
	hdr["X-Claude-Code-Session-Id"] = "rt-sess"
	turn := func(stream bool, msgs string) {
		// With a tool: a request without one is a side request, which
		// saves nothing.
		body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":%v,"tools":[{"name":"Read","description":"reads a file","input_schema":{"type":"object"}}],"messages":[%s]}`, stream, msgs)
		resp, b := do(t, "POST", h.URL+"/v1/messages", body, hdr)
		require.Equal(t, 200, resp.StatusCode, string(b))
	}
	settle := func() [][]string { time.Sleep(200 * time.Millisecond); return rt.Take() }
	first := `{"role":"user","content":"hi"}`
	turn(false, first)
	opening := settle()
	t.Logf("first turn: %d round trips %v", len(opening), opening)
	for _, stream := range []bool{false, true} {
		turn(stream, first+`,{"role":"assistant","content":"hello"},{"role":"user","content":"more"}`)
		var request, events [][]string
		for _, trip := range settle() {
			if eventTrip(trip) {
				events = append(events, trip)
			} else {
				request = append(request, trip)
			}
		}
		t.Logf("later turn (stream %v): %d round trips on the request path %v; event writes (off the path) %v", stream, len(request), request, events)
		require.Len(t, request, 2, "a later turn loads and saves: %v", request)
		require.Equal(t, []string{"HGET"}, request[0], "the load is one HGET")
		require.Equal(t, "EVAL", request[1][0], "the save is one pipeline: the compare-and-set, then the index")
		require.NotEmpty(t, events, "the events publisher wrote the turn's events")
	}
}

// TestRedisRoundTripsPerTurnPinned: with state.redis.pinned_sessions, a
// later turn of a session this process saved makes one round trip, the
// compare-and-set save: the load is answered from the session as saved.
// The metric counts the loads.
func TestRedisRoundTripsPerTurnPinned(t *testing.T) {
	url := kit.RedisURL(t)
	prefix := fmt.Sprintf("shepherd-rtp-%d", time.Now().UnixNano())
	t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
	st, rt := countedRedisStoreWith(t, "rtp", state.RedisOptions{PinnedSessions: true, KeyPrefix: prefix})
	h := newFeedHarness(t, feedOptions{Store: st, Config: func(c *config.Config) {
		d := config.Defaults()
		c.Topics.Enabled, c.Recovery.Enabled, c.Edits.Enabled = d.Topics.Enabled, d.Recovery.Enabled, d.Edits.Enabled
	}})
	hdr := anthropicHeaders()
	hdr["X-Claude-Code-Session-Id"] = "rtp-sess"
	msgs := `{"role":"user","content":"hi"}`
	turn := func(stream bool) {
		body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":%v,"tools":[{"name":"Read","description":"reads a file","input_schema":{"type":"object"}}],"messages":[%s]}`, stream, msgs)
		resp, b := do(t, "POST", h.URL+"/v1/messages", body, hdr)
		require.Equal(t, 200, resp.StatusCode, string(b))
		msgs += `,{"role":"assistant","content":"hello"},{"role":"user","content":"more"}`
	}
	settle := func() [][]string {
		time.Sleep(200 * time.Millisecond)
		var request [][]string
		for _, trip := range rt.Take() {
			if !eventTrip(trip) {
				request = append(request, trip)
			}
		}
		return request
	}
	turn(false)
	t.Logf("first turn: %v", settle())
	for _, stream := range []bool{false, true, false} {
		turn(stream)
		request := settle()
		t.Logf("later turn (stream %v): %v", stream, request)
		require.Len(t, request, 1, "a later turn only saves: %v", request)
		require.Equal(t, "EVAL", request[0][0], "the save is the compare-and-set pipeline")
	}
	m := kit.Metrics(t, h.URL+"/metrics")
	assert.Equal(t, 3.0, m.Value("shepherd_store_pinned_total", `result="hit"`))
	assert.Equal(t, 1.0, m.Value("shepherd_store_pinned_total", `result="miss"`), "the first turn read Redis")
	assert.Equal(t, 0.0, m.Value("shepherd_store_pinned_total", `result="stale"`))

	// Another process writes the session: the next turn is rewritten from
	// the older copy, its save notices, applies the turn to the session in
	// Redis, and counts it.
	other, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	key := budgetKey(t, st, "rtp-sess")
	before, err := other.Get(context.Background(), key)
	require.NoError(t, err)
	_, err = other.Update(context.Background(), key, func(s *state.Session) error { s.Requests += 100; return nil })
	require.NoError(t, err)
	rt.Take() // the test's own reads
	turn(false)
	request := settle()
	require.Len(t, request, 3, "the failed save, the read, the save again: %v", request)
	after, err := other.Get(context.Background(), key)
	require.NoError(t, err)
	assert.Equal(t, before.Requests+101, after.Requests, "the other write and this turn are both kept")
	assert.Equal(t, 1.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_store_pinned_total", `result="stale"`))
}

// TestRedisRoundTripsPerTurnBudgets: with budgets on (every request budget,
// a tool cap and the streak), a later turn still makes two round trips:
// the counters are read in the load's pipeline (HGET, HGETALL) and the
// turn's counter changes ride in the save's compare-and-set script. A
// reply with a tool call (passed, counted) is included.
func TestRedisRoundTripsPerTurnBudgets(t *testing.T) {
	st, rt := countedRedisStore(t, "rtb")
	h := newFeedHarness(t, feedOptions{Store: st, Config: func(c *config.Config) {
		c.Budgets.Enabled = hooks.OptInOn
		c.Budgets.MaxTurns, c.Budgets.MaxTokens, c.Budgets.MaxCostUSD, c.Budgets.MaxIdenticalCalls = 100, 10_000_000, 100, 10
		c.Budgets.ToolCalls = []string{"Read=50"}
	}})
	hdr := anthropicHeaders()
	hdr["X-Claude-Code-Session-Id"] = "rtb-sess"
	turn := func(stream bool, msgs string) {
		body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":%v,"tools":[{"name":"Read","description":"reads a file","input_schema":{"type":"object"}}],"messages":[%s]}`, stream, msgs)
		resp, b := do(t, "POST", h.URL+"/v1/messages", body, hdr)
		require.Equal(t, 200, resp.StatusCode, string(b))
	}
	settle := func() [][]string { time.Sleep(200 * time.Millisecond); return rt.Take() }
	first := `{"role":"user","content":"hi"}`
	turn(false, first)
	t.Logf("first turn: %v", settle())
	later := first + `,{"role":"assistant","content":"hello"},{"role":"user","content":"more"}`
	for i, stream := range []bool{false, true} {
		h.mock.Script(mock.Reply{Text: "reading", ToolCalls: []mock.ToolCall{{Name: "Read", Args: `{"path":"a.go"}`}}})
		turn(stream, later)
		var request [][]string
		for _, trip := range settle() {
			if !eventTrip(trip) {
				request = append(request, trip)
			}
		}
		t.Logf("later turn (stream %v): %d round trips on the request path %v", stream, len(request), request)
		require.Len(t, request, 2, "budgets add no round trip: %v", request)
		require.Equal(t, []string{"HGET", "HGETALL"}, request[0], "the load reads the counters in its pipeline")
		require.Equal(t, "EVAL", request[1][0], "the save's compare-and-set carries the counter changes")
		got, err := st.ReadCounters(context.Background(), budgetKey(t, st, "rtb-sess"))
		require.NoError(t, err)
		assert.Equal(t, int64(2+i), got["turns"], "every saved turn counted (the first one too)")
		assert.Equal(t, int64(1+i), got["calls:Read"], "the Read call passed and counted")
		assert.Positive(t, got["tokens"])
		rt.Take() // the test's own reads
	}
}

// budgetKey is the store key of the session id (its tenant looked up).
func budgetKey(t *testing.T, st *state.Redis, session string) state.Key {
	t.Helper()
	sums, err := st.List(context.Background(), "", 0)
	require.NoError(t, err)
	for _, s := range sums {
		if s.ID == session {
			return state.Key{Tenant: s.Tenant, Session: s.ID}
		}
	}
	t.Fatalf("session %s not stored", session)
	return state.Key{}
}
