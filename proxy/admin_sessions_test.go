package proxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestSessionsAPIAnswerShapes: the session list carries summaries only (no
// chapters, audit or ledger); one session carries its ledger only with
// ?include=ledger, and always says how many entries it has.
func TestSessionsAPIAnswerShapes(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Admin.Token = "adm1n" }})
	key := state.Key{Tenant: "t1", Session: "s1"}
	_, err := h.store.Update(context.Background(), key, func(s *state.Session) error {
		s.Requests = 2
		s.SetSlot(topics.Name, &topics.State{Topic: "fix login", Chapters: []topics.Chapter{{Title: "fix login"}}})
		s.Ledger = []state.LedgerEntry{{Kind: "reply", Anchor: "a1", Data: []byte(`{"text":"model output"}`)}}
		s.SetSlot(intents.Name, &intents.State{Intent: "INT-7", Audit: []intents.AuditEntry{{Tool: "Write", Decision: "allowed"}}})
		return nil
	})
	require.NoError(t, err)
	auth := map[string]string{"Authorization": "Bearer adm1n"}

	resp, list := do(t, "GET", h.URL+"/shepherd/v1/sessions", "", auth)
	require.Equal(t, 200, resp.StatusCode, string(list))
	sessions := gjson.GetBytes(list, "sessions").Array()
	require.Len(t, sessions, 1, string(list))
	got := map[string]bool{}
	sessions[0].ForEach(func(k, _ gjson.Result) bool { got[k.String()] = true; return true })
	require.Equal(t, map[string]bool{"id": true, "tenant": true, "created_at": true, "updated_at": true, "requests": true,
		"usage": true, "counts": true, "topic": true, "intent": true}, got)
	require.NotContains(t, string(list), "model output")

	resp, one := do(t, "GET", h.URL+"/shepherd/v1/sessions/s1?tenant=t1", "", auth)
	require.Equal(t, 200, resp.StatusCode, string(one))
	require.False(t, gjson.GetBytes(one, "ledger").Exists(), string(one))
	require.Equal(t, int64(1), gjson.GetBytes(one, "ledger_entries").Int())
	require.Equal(t, "INT-7", gjson.GetBytes(one, "intent").String())
	require.Equal(t, "allowed", gjson.GetBytes(one, "audit.0.decision").String())
	require.Equal(t, "fix login", gjson.GetBytes(one, "chapters.0.title").String())

	resp, full := do(t, "GET", h.URL+"/shepherd/v1/sessions/s1?tenant=t1&include=ledger", "", auth)
	require.Equal(t, 200, resp.StatusCode, string(full))
	require.Equal(t, "a1", gjson.GetBytes(full, "ledger.0.anchor").String(), string(full))
	require.NotEmpty(t, gjson.GetBytes(full, "ledger.0.data").String())
}

// TestSessionsAPIUsage: summaries and one session carry the creation time,
// the agent, the model, the usage with its cost, and the features' counts.
func TestSessionsAPIUsage(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	key := state.Key{Tenant: "t1", Session: "s1"}
	_, err := h.store.Update(context.Background(), key, func(s *state.Session) error {
		s.Agent, s.Model = "claude-code", "claude-sonnet-4-5-20250929"
		s.Usage = state.Usage{Turns: 3, InputTokens: 10, OutputTokens: 20, CacheReadTokens: 300, CacheWriteTokens: 40, CostUSD: 0.125}
		s.SetSlot(topics.Name, &topics.State{Topic: "b", Chapters: []topics.Chapter{{Title: "a"}, {Title: "b"}}})
		s.SetSlot(intents.Name, &intents.State{Audit: []intents.AuditEntry{{Tool: "Write", Decision: intents.DecisionRefused}, {Tool: "Read", Decision: intents.DecisionAllowed}}})
		return nil
	})
	require.NoError(t, err)

	check := func(j gjson.Result) {
		t.Helper()
		require.Equal(t, "claude-code", j.Get("agent").String(), j.Raw)
		require.Equal(t, "claude-sonnet-4-5-20250929", j.Get("model").String())
		require.True(t, j.Get("created_at").Exists())
		require.JSONEq(t, `{"turns":3,"input_tokens":10,"output_tokens":20,"cache_read_tokens":300,"cache_write_tokens":40,"cost_usd":0.125}`, j.Get("usage").Raw)
		require.JSONEq(t, `{"chapters":2,"refusals":1}`, j.Get("counts").Raw)
	}
	_, list := do(t, "GET", h.URL+"/shepherd/v1/sessions", "", nil)
	sessions := gjson.GetBytes(list, "sessions").Array()
	require.Len(t, sessions, 1, string(list))
	check(sessions[0])
	_, one := do(t, "GET", h.URL+"/shepherd/v1/sessions/s1?tenant=t1", "", nil)
	check(gjson.ParseBytes(one))
}

// TestSessionUsageEndToEnd: requests of a recognised agent, JSON and
// streamed, add their usage and list-price cost to the session, which the
// sessions API and the metrics show.
func TestSessionUsageEndToEnd(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
		c.Topics.Enabled = true // a feature on: the turn engine serves the reply
		c.Pricing.Models = []string{"claude-test input=1 output=10 cache_read=0.1 cache_write=2"}
	}})
	u := mock.Usage{Input: 1000, Output: 100, CacheRead: 20000, CacheWrite: 4000}
	h.mock.Script(mock.Reply{Text: "one", Usage: u}, mock.Reply{Text: "two", Usage: u})
	hdr := anthropicHeaders()
	hdr["X-Session-Id"] = "usage-1"
	hdr["User-Agent"] = "claude-cli/2.1.90 (external, cli)"
	body := `{"model":"claude-test","max_tokens":256,"tools":[{"name":"Read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Hello"}]%s}`
	for _, extra := range []string{"", `,"stream":true`} {
		resp, b := do(t, "POST", h.URL+"/v1/messages", strings.Replace(body, "%s", extra, 1), hdr)
		require.Equal(t, 200, resp.StatusCode, string(b))
	}
	_, one := do(t, "GET", h.URL+"/shepherd/v1/sessions/usage-1", "", nil)
	j := gjson.ParseBytes(one)
	require.Equal(t, "claude-code", j.Get("agent").String(), string(one))
	require.Equal(t, "claude-test", j.Get("model").String())
	require.Equal(t, int64(2), j.Get("requests").Int())
	// Per turn: 1000*1 + 100*10 + 20000*0.1 + 4000*2 = 12000 µ$.
	require.Equal(t, int64(2), j.Get("usage.turns").Int())
	require.Equal(t, int64(2000), j.Get("usage.input_tokens").Int())
	require.Equal(t, int64(200), j.Get("usage.output_tokens").Int())
	require.Equal(t, int64(40000), j.Get("usage.cache_read_tokens").Int())
	require.Equal(t, int64(8000), j.Get("usage.cache_write_tokens").Int())
	require.InDelta(t, 0.024, j.Get("usage.cost_usd").Float(), 1e-9)

	_, metrics := do(t, "GET", h.URL+"/metrics", "", nil)
	require.Contains(t, string(metrics), `shepherd_tokens_total{kind="cache_read",model="claude-test",route="messages"} 40000`)
	require.Contains(t, string(metrics), `shepherd_cost_usd_total{model="claude-test",route="messages"} 0.024`)
}
