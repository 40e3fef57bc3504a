package proxy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

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
	require.Equal(t, map[string]bool{"id": true, "tenant": true, "updated_at": true, "requests": true, "topic": true, "intent": true}, got)
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
