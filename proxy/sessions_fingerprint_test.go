package proxy_test

// Sessions of clients that send no session id (gemini-cli, Cline, SDK
// apps): derived from the conversation, never shared by two runs that
// started with the same prompt.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestFingerprintSessionsKeepRunsApart: two runs of a client without a
// session id start with byte-identical first requests. Run 1 selects an
// intent in its first turn; run 2's first request is forwarded exactly as
// run 1's was (nothing of run 1 applies to it), run 2 goes on without the
// intent, and run 1's continuation finds its own session. Memory and Redis.
func TestFingerprintSessionsKeepRunsApart(t *testing.T) {
	stores := map[string]func(t *testing.T) state.Store{
		"memory": func(*testing.T) state.Store { return nil },
		"redis": func(t *testing.T) state.Store {
			url := kit.RedisURL(t)
			prefix := fmt.Sprintf("shepherd-fp-%d", time.Now().UnixNano())
			t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
			st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
			require.NoError(t, err)
			return st
		},
	}
	for name, open := range stores {
		for _, apiName := range []string{"gemini", "openai_chat"} {
			t.Run(name+"/"+apiName, func(t *testing.T) {
				t.Parallel()
				api := topicAPINamed(t, apiName)
				h := newHarness(t, harnessOptions{Store: open(t), Config: intentsOn(intentWorkspace(t, intentPolicy("")))})
				// No session header: only the API's credentials.
				run1 := &rawIntentAgent{a: kit.NewAgent(api.d, h.URL, nil)}
				run2 := &rawIntentAgent{a: kit.NewAgent(api.d, h.URL, nil)}
				requireRunsApart(t, h, api, run1, run2)
			})
		}
	}
}

// TestFingerprintSessionHeaderFollowsConversation: the first response of a
// conversation without a session id names the session its continuation
// uses, and a retried first request starts fresh again.
func TestFingerprintSessionHeaderFollowsConversation(t *testing.T) {
	t.Parallel()
	api := topicAPINamed(t, "gemini")
	h := newHarness(t, harnessOptions{Config: intentsOn(intentWorkspace(t, intentPolicy("")))})
	h.mock.Script(mock.Reply{ID: "m1", Text: "one"}, mock.Reply{ID: "m2", Text: "two"}, mock.Reply{ID: "m3", Text: "three"})
	first := api.request([]string{api.user("hello")})
	resp1, body1 := do(t, "POST", h.URL+api.path, first, api.headers)
	require.Equal(t, 200, resp1.StatusCode, string(body1))
	sid := resp1.Header.Get("X-Shepherd-Session")
	require.Regexp(t, `^fp-[0-9a-f]{32}$`, sid)

	resp2, _ := do(t, "POST", h.URL+api.path, api.request([]string{api.user("hello"), api.echo(body1)[0], api.user("more")}), api.headers)
	require.Equal(t, sid, resp2.Header.Get("X-Shepherd-Session"), "the continuation finds the session")

	resp3, body3 := do(t, "POST", h.URL+api.path, first, api.headers)
	require.Equal(t, 200, resp3.StatusCode)
	require.NotEqual(t, sid, resp3.Header.Get("X-Shepherd-Session"), "another reply, another conversation: %s", body3)
}

// TestFingerprintSessionsKeepRunsApartStreamed: the same with each API's
// official SDK streaming and sending no session id (genai is what
// gemini-cli uses): the opening turn is saved from the stream writer.
func TestFingerprintSessionsKeepRunsApartStreamed(t *testing.T) {
	for _, sa := range topicStreamAPIs() {
		t.Run(sa.name, func(t *testing.T) {
			t.Parallel()
			api := topicAPINamed(t, sa.name)
			h := newHarness(t, harnessOptions{Config: intentsOn(intentWorkspace(t, intentPolicy("")))})
			ctx := e2eCtx(t)
			run1 := &sdkIntentAgent{s: sa.session(t, h.URL, map[string]string{}, &http.Client{}), stream: true, ctx: ctx}
			run2 := &sdkIntentAgent{s: sa.session(t, h.URL, map[string]string{}, &http.Client{}), stream: true, ctx: ctx}
			requireRunsApart(t, h, api, run1, run2)
		})
	}
}

// requireRunsApart runs two conversations with the same first prompt: run 1
// selects an intent in its first turn, run 2 does not. Run 2's first
// request is forwarded exactly as run 1's (nothing of run 1 applies), each
// continuation finds its own session.
func requireRunsApart(t *testing.T, h *harness, api topicAPI, run1, run2 intentAgent) {
	t.Helper()
	h.mock.Script(
		mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "s1", Name: intents.IntentTool, Args: `{"intent_id":"INT-001"}`}}},
		mock.Reply{ID: "m2", Text: "Working on INT-001."},
		mock.Reply{ID: "m3", Text: "Run two, no intent yet."},
		mock.Reply{ID: "m4", Text: "Run one goes on."},
		mock.Reply{ID: "m5", Text: "Run two goes on."},
	)

	run1.user("fix the login bug")
	require.Equal(t, "Working on INT-001.", run1.send(t).text)
	run2.user("fix the login bug")
	require.Equal(t, "Run two, no intent yet.", run2.send(t).text)

	reqs := h.mock.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, string(reqs[0].Body), string(reqs[2].Body),
		"run 2's first request is forwarded exactly as run 1's: no state of run 1 applies")

	run1.user("write it")
	require.Equal(t, "Run one goes on.", run1.send(t).text)
	run2.user("write it")
	require.Equal(t, "Run two goes on.", run2.send(t).text)
	reqs = h.mock.Requests()
	require.Len(t, reqs, 5)
	require.Contains(t, lastHistoryItem(api, reqs[3].Body), "[Active Intent: INT-001", "run 1 finds its session")
	require.Contains(t, lastHistoryItem(api, reqs[4].Body), "[Active Intent: none]", "run 2 has its own")
	require.Contains(t, string(reqs[3].Body), intents.IntentTool+`"`, "run 1's history has the selection shepherd answered (ledger)")
	requireAppendOnly(t, api, reqs[1].Body, reqs[3].Body)
	requireAppendOnly(t, api, reqs[2].Body, reqs[4].Body)
}
