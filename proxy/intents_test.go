package proxy_test

// End-to-end tests of intent governance through the
// real proxy against the scripted mock provider: the gatekeeper, selection,
// scope, the policy watcher, fail-closed and fail-open, Redis, and the
// sessions API. The streamed variants are in intents_stream_test.go, the
// Claude Code session in intents_claude_code_test.go.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Tool-call arguments of the scenarios. Their keys are in sorted order, as
// google.golang.org/genai re-serialises them (a map), so that the
// scenarios test governance, not argument key order; see
// TestIntentsReplayWithReorderedArguments for that.
const (
	writeSrcArgs  = `{"content":"package a\n","file_path":"src/a.go"}`
	writeDocsArgs = `{"content":"# X\n","file_path":"docs/x.md"}`
	readSrcArgs   = `{"file_path":"src/a.go"}`
)

// runIntentGatekeeperFlow is scenario 1 on one API and mode, in one agent
// turn: the model writes with no intent (refused by the gatekeeper, the
// turn goes on), selects INT-001 (answered by shepherd, the turn goes on),
// writes again (allowed: the agent gets that call only). Then the agent
// returns its result and the model finishes.
func runIntentGatekeeperFlow(t *testing.T, c intentCase) {
	dir := intentWorkspace(t, intentPolicy(""))
	h := newIntentHarness(t, dir)
	session := "gate-" + strings.ReplaceAll(c.name(), "/", "-")
	h.mock.Script(
		mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}}},
		mock.Reply{ID: "m2", ToolCalls: []mock.ToolCall{{ID: "s1", Name: intents.IntentTool, Args: `{"intent_id":"INT-001"}`}}},
		mock.Reply{ID: "m3", ToolCalls: []mock.ToolCall{{ID: "w2", Name: "Write", Args: writeSrcArgs}}},
		mock.Reply{ID: "m4", Text: "Done."},
	)
	a := c.agent(t, h, session)
	streamed := c.mode == "stream"

	// Turn 1: three upstream requests, one call for the agent.
	a.user("fix the login bug")
	reply := a.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "w2", Name: "Write", Args: writeSrcArgs}}, reply.calls)
	reqs := h.mock.Requests()
	require.Len(t, reqs, 3, "the refusal and the selection are each followed up")
	for i, r := range reqs {
		require.Equal(t, streamed, r.Stream, "upstream request %d", i+1)
	}
	r1, r2, r3 := reqs[0].Body, reqs[1].Body, reqs[2].Body
	require.Contains(t, gjson.GetBytes(r1, "tools").Raw, `"`+intents.IntentTool+`"`, "the model is offered select_active_intent")
	require.Contains(t, string(r1), intents.IntentRule, "the intent-first rule is in the system prompt")
	require.Contains(t, lastHistoryItem(c.api, r1), "[Active Intent: none]", "the newest user turn names no intent")
	requireAppendOnly(t, c.api, r1, r2)
	requireAppendOnly(t, c.api, r2, r3)
	_, res := requireRefusal(t, c.api.name, r2, "w1", intents.GatekeeperMessage)
	require.Equal(t, intents.GatekeeperMessage, modelHistory(t, c.api.name, r2)[res].content, "the documented text")
	sel := requireResult(t, c.api.name, r3, "s1")
	require.Contains(t, sel.content, `<intent_context intent_id="INT-001">`)
	require.False(t, sel.isError)
	require.Contains(t, string(r3), `<intent_context intent_id=\"INT-001\">`)

	// Turn 2: the agent returns the Write's result.
	a.toolResult("w2", "Write")
	reply = a.send(t)
	require.Equal(t, "Done.", reply.text)
	require.Empty(t, reply.calls)
	reqs = h.mock.Requests()
	require.Len(t, reqs, 4)
	r4 := reqs[3].Body
	requireAppendOnly(t, c.api, r3, r4)
	require.Contains(t, lastHistoryItem(c.api, r4), "[Active Intent: INT-001")
	items := modelHistory(t, c.api.name, r4)
	order := []int{
		histIndex(items, true, "w1"), histIndex(items, false, "w1"),
		histIndex(items, true, "s1"), histIndex(items, false, "s1"),
		histIndex(items, true, "w2"), histIndex(items, false, "w2"),
	}
	require.GreaterOrEqual(t, order[0], 0, "the refused call stays in the model's history: %+v", items)
	require.IsIncreasing(t, order, "the model's whole turn, in order: %+v", items)
	require.Equal(t, "ok", items[order[5]].content, "the agent's result of the allowed Write")

	sess := intentSession(t, h, session)
	require.Equal(t, "INT-001", intentsOf(t, sess).Intent)
	require.Equal(t, []string{
		"refused gatekeeper Write w1 ",
		"selected select_intent select_active_intent s1 INT-001",
		"allowed checks_passed Write w2 INT-001",
	}, auditTrail(intentsOf(t, sess).Audit))
	require.Equal(t, intents.GatekeeperMessage, intentsOf(t, sess).Audit[0].Reason)
	require.Equal(t, 1.0, decisions(t, h, "refused", "gatekeeper"))
	require.Equal(t, 1.0, decisions(t, h, "selected", "select_intent"))
	require.Equal(t, 1.0, decisions(t, h, "allowed", "checks_passed"))
}

// TestIntentsGatekeeperThenSelection runs scenario 1 non-streaming on every
// API, with hand-built bodies and with the official SDKs.
func TestIntentsGatekeeperThenSelection(t *testing.T) {
	for _, c := range intentCases("raw", "unary") {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runIntentGatekeeperFlow(t, c)
		})
	}
}

// runIntentScopeFlow is scenario 2 on one API and mode: with INT-001 the
// starting intent, the model writes out of scope and reads in the same
// reply. The agent gets only the Read; the refused Write and its reason are
// put into the model's history, before the Read's result, on the next
// request and the one after.
func runIntentScopeFlow(t *testing.T, c intentCase) {
	dir := intentWorkspace(t, intentPolicy("INT-001"))
	h := newIntentHarness(t, dir)
	session := "scope-" + strings.ReplaceAll(c.name(), "/", "-")
	h.mock.Script(
		mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
			{ID: "w1", Name: "Write", Args: writeDocsArgs},
			{ID: "r1", Name: "Read", Args: readSrcArgs},
		}},
		mock.Reply{ID: "m2", Text: "Read it."},
		mock.Reply{ID: "m3", Text: "Still here."},
	)
	a := c.agent(t, h, session)
	before := decisions(t, h, "refused", "scope")

	a.user("document and fix")
	reply := a.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "r1", Name: "Read", Args: readSrcArgs}}, reply.calls)
	require.Len(t, h.mock.Requests(), 1, "no follow-up: the agent has a call to run")
	require.Contains(t, lastHistoryItem(c.api, h.mock.Requests()[0].Body), "[Active Intent: INT-001 — Fix the login bug]",
		"current_intent_id is the starting intent of a new session")
	require.Equal(t, before+1, decisions(t, h, "refused", "scope"))

	const reason = `"docs/x.md" is outside the scope of intent INT-001`
	a.toolResult("r1", "Read")
	reply = a.send(t)
	require.Equal(t, "Read it.", reply.text)
	a.user("go on")
	reply = a.send(t)
	require.Equal(t, "Still here.", reply.text)

	reqs := h.mock.Requests()
	require.Len(t, reqs, 3)
	requireAllAppendOnly(t, c.api, reqs)
	for _, i := range []int{1, 2} {
		body := reqs[i].Body
		call, refusal := requireRefusal(t, c.api.name, body, "w1", reason)
		items := modelHistory(t, c.api.name, body)
		read := histIndex(items, true, "r1")
		readResult := histIndex(items, false, "r1")
		require.Less(t, call, read, "request %d: the calls in the model's order", i+1)
		require.Less(t, read, refusal, "request %d: the results follow the calls", i+1)
		require.Less(t, refusal, readResult, "request %d: shepherd's refusal comes before the agent's result", i+1)
		require.Equal(t, "ok", items[readResult].content)
	}

	sess := intentSession(t, h, session)
	require.Equal(t, "INT-001", intentsOf(t, sess).Intent, "the starting intent is saved")
	require.Equal(t, []string{
		"refused scope Write w1 INT-001",
		"allowed checks_passed Read r1 INT-001",
	}, auditTrail(intentsOf(t, sess).Audit))
	require.Contains(t, intentsOf(t, sess).Audit[0].Reason, reason)
}

// TestIntentsScopeRefusalBesideAllowedCall runs scenario 2 non-streaming on
// every API.
func TestIntentsScopeRefusalBesideAllowedCall(t *testing.T) {
	for _, c := range intentCases("raw", "unary") {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runIntentScopeFlow(t, c)
		})
	}
}

// TestIntentsPolicyHotReload: the policy file is watched. A Write refused
// under the first policy is allowed once the file is rewritten in place to
// widen the scope, and the next change, an atomic rename over the file,
// applies as well: all within one session, without a restart.
func TestIntentsPolicyHotReload(t *testing.T) {
	t.Parallel()
	api := topicAPINamed(t, "anthropic")
	dir := intentWorkspace(t, intentPolicy("INT-001"))
	h := newIntentHarness(t, dir)
	a := intentCase{api: api, mode: "raw"}.agent(t, h, "reload")
	_, ready := readyz(t, h)
	reloads := gjson.GetBytes(ready, "policies.0.reloads").Int()

	// Turn 1: docs/ is out of scope.
	h.mock.Script(
		mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeDocsArgs}}},
		mock.Reply{ID: "m2", Text: "docs/ is out of scope."},
	)
	a.user("write the docs")
	reply := a.send(t)
	require.Equal(t, "docs/ is out of scope.", reply.text)
	require.Empty(t, reply.calls)
	requireRefusal(t, api.name, h.mock.Requests()[1].Body, "w1", `"docs/x.md" is outside the scope of intent INT-001`)

	// The file is rewritten in place to allow docs/** as well.
	ok := policyLoads(t, h, "ok")
	writeIntentPolicy(t, dir, strings.Replace(intentPolicy("INT-001"), `["src/**", "tests/**"]`, `["src/**", "tests/**", "docs/**"]`, 1))
	waitPolicyLoads(t, h, "ok", ok)
	require.Eventually(t, func() bool {
		_, b := readyz(t, h)
		return gjson.GetBytes(b, "policies.0.reloads").Int() > reloads
	}, 10*time.Second, 5*time.Millisecond, "/readyz counts the reload")

	// Turn 2: the same Write is allowed.
	h.mock.Script(mock.Reply{ID: "m3", ToolCalls: []mock.ToolCall{{ID: "w2", Name: "Write", Args: writeDocsArgs}}})
	a.user("try again")
	reply = a.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "w2", Name: "Write", Args: writeDocsArgs}}, reply.calls)

	// Replaced by rename: notes/** too.
	ok = policyLoads(t, h, "ok")
	renameIntentPolicy(t, dir, strings.Replace(intentPolicy("INT-001"), `["src/**", "tests/**"]`, `["src/**", "tests/**", "docs/**", "notes/**"]`, 1))
	waitPolicyLoads(t, h, "ok", ok)

	// Turn 3: notes/ is allowed now, and a later rename still applies (the
	// watcher follows the new file, not the replaced inode).
	notes := `{"file_path":"notes/todo.md","content":"- x\n"}`
	h.mock.Script(mock.Reply{ID: "m4", ToolCalls: []mock.ToolCall{{ID: "w3", Name: "Write", Args: notes}}})
	a.toolResult("w2", "Write")
	reply = a.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "w3", Name: "Write", Args: notes}}, reply.calls)

	ok = policyLoads(t, h, "ok")
	renameIntentPolicy(t, dir, intentPolicy("INT-001"))
	waitPolicyLoads(t, h, "ok", ok)
	h.mock.Script(
		mock.Reply{ID: "m5", ToolCalls: []mock.ToolCall{{ID: "w4", Name: "Write", Args: notes}}},
		mock.Reply{ID: "m6", Text: "notes/ is out of scope again."},
	)
	a.toolResult("w3", "Write")
	reply = a.send(t)
	require.Equal(t, "notes/ is out of scope again.", reply.text)
	require.Empty(t, reply.calls)

	requireAllAppendOnly(t, api, h.mock.Requests())
	require.Equal(t, []string{
		"refused scope Write w1 INT-001",
		"allowed checks_passed Write w2 INT-001",
		"allowed checks_passed Write w3 INT-001",
		"refused scope Write w4 INT-001",
	}, auditTrail(intentsOf(t, intentSession(t, h, "reload")).Audit))
}

// TestIntentsBrokenPolicyKeepsLastGood: a broken edit of the policy file is
// reported (/readyz degraded with the line, the validity gauge at 0) while
// the last good policy stays in force.
func TestIntentsBrokenPolicyKeepsLastGood(t *testing.T) {
	t.Parallel()
	api := topicAPINamed(t, "anthropic")
	dir := intentWorkspace(t, intentPolicy("INT-001"))
	h := newIntentHarness(t, dir)
	file := intentPolicyFile(dir)
	valid := func() float64 { return metricValue(t, h, "shepherd_intents_policy_valid", `file="`+file+`"`) }
	status, b := readyz(t, h)
	require.Equal(t, 200, status, string(b))
	require.Equal(t, "ok", gjson.GetBytes(b, "status").String(), string(b))
	require.Equal(t, 1.0, valid())

	errs := policyLoads(t, h, "error")
	writeIntentPolicy(t, dir, intentBrokenPolicy)
	waitPolicyLoads(t, h, "error", errs)
	status, b = readyz(t, h)
	require.Equal(t, 200, status, "a broken policy does not make shepherd unready: %s", b)
	require.Equal(t, "degraded", gjson.GetBytes(b, "status").String(), string(b))
	pol := gjson.GetBytes(b, "policies.0")
	require.Contains(t, pol.Get("error").String(), ":4:", "the error names the line: %s", b)
	require.True(t, pol.Get("loaded").Bool(), "the last good policy is still loaded: %s", b)
	require.Zero(t, valid())

	// Still governed by the last good policy.
	h.mock.Script(mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
		{ID: "w1", Name: "Write", Args: writeSrcArgs},
		{ID: "w2", Name: "Write", Args: writeDocsArgs},
	}})
	a := intentCase{api: api, mode: "raw"}.agent(t, h, "broken")
	a.user("go")
	reply := a.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}}, reply.calls)
	require.Contains(t, lastHistoryItem(api, h.mock.Requests()[0].Body), "[Active Intent: INT-001 — Fix the login bug]")
	sess := intentSession(t, h, "broken")
	require.Equal(t, []string{
		"allowed checks_passed Write w1 INT-001",
		"refused scope Write w2 INT-001",
	}, auditTrail(intentsOf(t, sess).Audit))

	// Fixed again: healthy.
	ok := policyLoads(t, h, "ok")
	writeIntentPolicy(t, dir, intentPolicy("INT-001"))
	waitPolicyLoads(t, h, "ok", ok)
	status, b = readyz(t, h)
	require.Equal(t, 200, status)
	require.Equal(t, "ok", gjson.GetBytes(b, "status").String(), string(b))
	require.Empty(t, gjson.GetBytes(b, "policies.0.error").String())
	require.Equal(t, 1.0, valid())
}

// TestIntentsNoValidPolicy: with no policy ever loaded (a broken or a
// missing file), intents.on_error decides: closed refuses every call but
// the always-allowed ones, with a reason saying the policy is unavailable;
// open lets them through.
func TestIntentsNoValidPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string // "" for no file
		mode   intents.FailMode
	}{
		{"broken_closed", intentBrokenPolicy, intents.FailClosed},
		{"broken_open", intentBrokenPolicy, intents.FailOpen},
		{"missing_closed", "", intents.FailClosed},
		{"missing_open", "", intents.FailOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := topicAPINamed(t, "anthropic")
			dir := intentWorkspace(t, tc.policy)
			h := newIntentHarness(t, dir, func(c *config.Config) { c.Intents.OnError = tc.mode })
			status, b := readyz(t, h)
			require.Equal(t, 200, status, string(b))
			require.Equal(t, "degraded", gjson.GetBytes(b, "status").String(), string(b))
			require.False(t, gjson.GetBytes(b, "policies.0.loaded").Bool(), string(b))
			if tc.policy != "" {
				require.Contains(t, gjson.GetBytes(b, "policies.0.error").String(), ":4:", string(b))
			}

			a := intentCase{api: api, mode: "raw"}.agent(t, h, "nopolicy")
			if tc.mode == intents.FailOpen {
				h.mock.Script(mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
					{ID: "w1", Name: "Write", Args: writeSrcArgs},
					{ID: "r1", Name: "Read", Args: readSrcArgs},
				}})
				a.user("go")
				reply := a.send(t)
				requireCalls(t, []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}, {ID: "r1", Name: "Read", Args: readSrcArgs}}, reply.calls)
				require.Equal(t, []string{
					"allowed fail_open Write w1 ",
					"allowed always_allowed Read r1 ",
				}, auditTrail(intentsOf(t, intentSession(t, h, "nopolicy")).Audit))
				return
			}
			// Closed: the lone Write is refused and the model told why;
			// then a Read passes.
			h.mock.Script(
				mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}}},
				mock.Reply{ID: "m2", ToolCalls: []mock.ToolCall{{ID: "r1", Name: "Read", Args: readSrcArgs}}},
			)
			a.user("go")
			reply := a.send(t)
			requireCalls(t, []mock.ToolCall{{ID: "r1", Name: "Read", Args: readSrcArgs}}, reply.calls)
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			require.Contains(t, lastHistoryItem(api, reqs[0].Body), "[Active Intent: none — the intents policy is unavailable]")
			_, r := requireRefusal(t, api.name, reqs[1].Body, "w1", "policy is unavailable")
			refusal := modelHistory(t, api.name, reqs[1].Body)[r].content
			if tc.policy != "" {
				require.Contains(t, refusal, ":4:", "the reason names the problem")
			}
			sess := intentSession(t, h, "nopolicy")
			require.Equal(t, []string{
				"refused policy_unavailable Write w1 ",
				"allowed always_allowed Read r1 ",
			}, auditTrail(intentsOf(t, sess).Audit))
			require.Equal(t, refusal, intentsOf(t, sess).Audit[0].Reason)
			require.Equal(t, 1.0, decisions(t, h, "refused", "policy_unavailable"))
		})
	}
}

// TestIntentsStoreDown: when the session state cannot be read, closed
// governance refuses what it cannot vouch for (the model is told the
// session state is unavailable) and lets always-allowed tools run; open
// passes the request through untouched.
func TestIntentsStoreDown(t *testing.T) {
	for _, mode := range []intents.FailMode{intents.FailClosed, intents.FailOpen} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			api := topicAPINamed(t, "anthropic")
			dir := intentWorkspace(t, intentPolicy("INT-001"))
			h := newHarness(t, harnessOptions{Store: &failingStore{}, Config: intentsOn(dir, func(c *config.Config) { c.Intents.OnError = mode })})
			a := intentCase{api: api, mode: "raw"}.agent(t, h, "down")
			if mode == intents.FailOpen {
				h.mock.Script(mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeDocsArgs}}})
				a.user("go")
				reply := a.send(t)
				requireCalls(t, []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeDocsArgs}}, reply.calls)
				got, _ := h.mock.Last()
				require.Equal(t, api.request([]string{api.user("go")}), string(got.Body), "passed through untouched")
				return
			}
			h.mock.Script(
				mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}}},
				mock.Reply{ID: "m2", ToolCalls: []mock.ToolCall{{ID: "r1", Name: "Read", Args: readSrcArgs}}},
			)
			a.user("go")
			reply := a.send(t)
			requireCalls(t, []mock.ToolCall{{ID: "r1", Name: "Read", Args: readSrcArgs}}, reply.calls)
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			requireAppendOnly(t, api, reqs[0].Body, reqs[1].Body)
			requireRefusal(t, api.name, reqs[1].Body, "w1", "cannot read this session's state")
			require.Equal(t, 1.0, decisions(t, h, "refused", "state_unavailable"))
			require.Equal(t, 1.0, decisions(t, h, "allowed", "always_allowed"))
		})
	}
}

// TestIntentsTwoReplicasShareRedis: two shepherd processes share one Redis
// and one workspace. The intent selected through replica A governs the
// session on replica B, and the audit trail is visible from either.
func TestIntentsTwoReplicasShareRedis(t *testing.T) {
	url := kit.RedisURL(t)
	t.Parallel()
	prefix := fmt.Sprintf("shepherd-intents-%d", time.Now().UnixNano())
	t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
	open := func() state.Store {
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		require.NoError(t, err)
		return st
	}
	api := topicAPINamed(t, "anthropic")
	dir := intentWorkspace(t, intentPolicy(""))
	a := newHarness(t, harnessOptions{Store: open(), Config: intentsOn(dir)})
	b := newHarness(t, harnessOptions{Store: open(), Config: intentsOn(dir, func(c *config.Config) {
		c.Upstreams.Anthropic = a.mock.URL() // one provider behind both replicas
	})})
	a.mock.Script(
		mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "s1", Name: intents.IntentTool, Args: `{"intent_id":"INT-001"}`}}},
		mock.Reply{ID: "m2", Text: "Working on INT-001."},
		mock.Reply{ID: "m3", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}}},
	)
	agentA := intentCase{api: api, mode: "raw"}.agent(t, a, "shared-intent").(*rawIntentAgent)

	// Turn 1 through A: the selection.
	agentA.user("fix the login bug")
	reply := agentA.send(t)
	require.Equal(t, "Working on INT-001.", reply.text)
	require.Empty(t, reply.calls)

	// Turn 2 through B, same conversation: the Write is allowed.
	agentB := &rawIntentAgent{a: &kit.Agent{D: api.d, URL: b.URL, Header: agentA.a.Header, Request: agentA.a.Request, History: agentA.a.History}}
	agentB.user("write it")
	reply = agentB.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "w1", Name: "Write", Args: writeSrcArgs}}, reply.calls)

	reqs := a.mock.Requests()
	require.Len(t, reqs, 3)
	requireAllAppendOnly(t, api, reqs)
	require.Contains(t, lastHistoryItem(api, reqs[2].Body), "[Active Intent: INT-001", "replica B sees the intent replica A set")

	want := []string{
		"selected select_intent select_active_intent s1 INT-001",
		"allowed checks_passed Write w1 INT-001",
	}
	for _, h := range []*harness{a, b} {
		resp, got := do(t, "GET", h.URL+"/shepherd/v1/sessions/shared-intent", "", nil)
		require.Equal(t, 200, resp.StatusCode, string(got))
		require.Equal(t, "INT-001", gjson.GetBytes(got, "intent").String())
		require.Equal(t, want, auditTrailJSON(gjson.GetBytes(got, "audit")))
	}
}

// TestIntentsSessionsAPI: GET /shepherd/v1/sessions/{id} returns the
// session's intent and its audit trail with every field of a decision.
func TestIntentsSessionsAPI(t *testing.T) {
	t.Parallel()
	api := topicAPINamed(t, "anthropic")
	dir := intentWorkspace(t, intentPolicy("INT-001"))
	h := newIntentHarness(t, dir, func(c *config.Config) { c.Admin.Token = "admin-secret" })
	h.mock.Script(mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
		{ID: "w1", Name: "Write", Args: writeDocsArgs},
		{ID: "b1", Name: "Bash", Args: `{"command":"go test ./..."}`},
		{ID: "w2", Name: "Write", Args: writeSrcArgs},
	}})
	a := intentCase{api: api, mode: "raw"}.agent(t, h, "api-session")
	a.user("go")
	reply := a.send(t)
	requireCalls(t, []mock.ToolCall{{ID: "w2", Name: "Write", Args: writeSrcArgs}}, reply.calls)

	admin := map[string]string{"Authorization": "Bearer admin-secret"}
	resp, _ := do(t, "GET", h.URL+"/shepherd/v1/sessions/api-session", "", nil)
	require.Equal(t, 401, resp.StatusCode, "the audit is behind the admin token")
	tenant := tenantOfHarness(t, h, "api-session")
	resp, got := do(t, "GET", h.URL+"/shepherd/v1/sessions/api-session?tenant="+tenant, "", admin)
	require.Equal(t, 200, resp.StatusCode, string(got))
	require.Equal(t, "INT-001", gjson.GetBytes(got, "intent").String())
	audit := gjson.GetBytes(got, "audit").Array()
	require.Len(t, audit, 3, string(got))
	for i, want := range []struct{ decision, rule, reason, tool, callID string }{
		{"refused", "scope", `Write on "docs/x.md" is outside the scope of intent INT-001`, "Write", "w1"},
		{"refused", "disallow_tools", `intent INT-001 disallows the tool "Bash"`, "Bash", "b1"},
		{"allowed", "checks_passed", "", "Write", "w2"},
	} {
		e := audit[i]
		require.Equal(t, want.decision, e.Get("decision").String(), e.Raw)
		require.Equal(t, want.rule, e.Get("rule").String(), e.Raw)
		require.Equal(t, want.tool, e.Get("tool").String(), e.Raw)
		require.Equal(t, want.callID, e.Get("call_id").String(), e.Raw)
		require.Equal(t, "INT-001", e.Get("intent").String(), e.Raw)
		if want.reason == "" {
			require.False(t, e.Get("reason").Exists(), e.Raw)
		} else {
			require.Contains(t, e.Get("reason").String(), want.reason, e.Raw)
		}
		at, err := time.Parse(time.RFC3339Nano, e.Get("at").String())
		require.NoError(t, err, e.Raw)
		require.WithinDuration(t, time.Now(), at, time.Minute)
	}
	// The listing names the intent too.
	resp, got = do(t, "GET", h.URL+"/shepherd/v1/sessions?tenant="+tenant, "", admin)
	require.Equal(t, 200, resp.StatusCode, string(got))
	require.Equal(t, "INT-001", gjson.GetBytes(got, `sessions.#(id=="api-session").intent`).String(), string(got))
}
