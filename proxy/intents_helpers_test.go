package proxy_test

// Shared fixtures of the intent-governance end-to-end tests (intents_*.go):
// a workspace with a policy file, a harness with intents on, agents that
// speak each wire API (raw HTTP, or an official SDK streaming or not), and
// readers of the model's view in the upstream requests.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// intentPolicyTmpl is the test policy; %s is current_intent_id. Keep the
// line numbers stable: intentBrokenPolicy relies on the id being on line 4.
const intentPolicyTmpl = `version: 1
current_intent_id: %s
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**", "tests/**"]
      deny_glob: ["src/auth/secrets/**"]
    constraints:
      disallow_tools: ["Bash"]
      disallow_patterns: ["rm\\s+-rf"]
    acceptance_criteria:
      - id: AC-1
        description: "empty passwords are rejected"
        status: pending
  - id: INT-002
    summary: "Write the docs"
    scope:
      allow_glob: ["docs/**"]
`

// intentPolicy renders the test policy with current_intent_id current
// ("" for null).
func intentPolicy(current string) string {
	if current == "" {
		current = "null"
	}
	return fmt.Sprintf(intentPolicyTmpl, current)
}

// intentBrokenPolicy has an invalid intent id on line 4.
const intentBrokenPolicy = `version: 1
current_intent_id: null
intents:
  - id: login-fix
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**"]
`

// intentWorkspace makes a workspace root holding policy (unless policy is
// "") at .orchestration/active_intents.yaml.
func intentWorkspace(t *testing.T, policy string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".orchestration"), 0o755))
	if policy != "" {
		writeIntentPolicy(t, dir, policy)
	}
	return dir
}

func intentPolicyFile(dir string) string {
	return filepath.Join(dir, ".orchestration", "active_intents.yaml")
}

// writeIntentPolicy rewrites the policy file in place.
func writeIntentPolicy(t *testing.T, dir, policy string) {
	t.Helper()
	require.NoError(t, os.WriteFile(intentPolicyFile(dir), []byte(policy), 0o644))
}

// renameIntentPolicy replaces the policy file atomically, the way editors
// and config management do: write a temporary file, rename it over.
func renameIntentPolicy(t *testing.T, dir, policy string) {
	t.Helper()
	tmp := filepath.Join(dir, ".orchestration", ".active_intents.yaml.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(policy), 0o644))
	require.NoError(t, os.Rename(tmp, intentPolicyFile(dir)))
}

// intentsOn is a harness Config func turning governance on for workspace
// dir, then applying mods.
func intentsOn(dir string, mods ...func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Intents.Enabled = config.SwitchOn
		c.Intents.WorkspaceRoot = dir
		for _, m := range mods {
			m(c)
		}
	}
}

// newIntentHarness starts a harness governed by the policy of workspace dir.
func newIntentHarness(t *testing.T, dir string, mods ...func(*config.Config)) *harness {
	t.Helper()
	return newHarness(t, harnessOptions{Config: intentsOn(dir, mods...)})
}

// ---- agents ----

// intentReply is what the agent got from one turn.
type intentReply struct {
	text  string
	calls []mock.ToolCall
}

// intentAgent is one agent conversation on one wire API.
type intentAgent interface {
	user(text string)
	// toolResult appends the agent's result "ok" for its call id.
	toolResult(id, name string)
	send(t *testing.T) intentReply
}

// rawIntentAgent speaks raw HTTP with a kit agent and the topicAPIs()
// request.
type rawIntentAgent struct{ a *kit.Agent }

func (a *rawIntentAgent) user(text string)           { a.a.User(text) }
func (a *rawIntentAgent) toolResult(id, name string) { a.a.ToolResult(id, name, "ok") }

func (a *rawIntentAgent) send(t *testing.T) intentReply {
	t.Helper()
	resp, body := a.a.Post(t)
	require.Equal(t, 200, resp.StatusCode, string(body))
	r, err := a.a.D.ParseReply(body)
	require.NoError(t, err)
	return intentReply{text: r.Text, calls: r.Calls}
}

// rawReplyCalls reads the tool calls (id, name, arguments) of a
// non-streaming reply.
func rawReplyCalls(t *testing.T, api string, body []byte) []mock.ToolCall {
	t.Helper()
	r, err := kit.Get(t, api).ParseReply(body)
	require.NoError(t, err)
	return r.Calls
}

// sdkIntentAgent drives a topicStreamSession, streaming or not.
type sdkIntentAgent struct {
	s      topicStreamSession
	stream bool
	ctx    context.Context
}

func (a *sdkIntentAgent) user(text string)           { a.s.user(text) }
func (a *sdkIntentAgent) toolResult(id, name string) { a.s.toolResult(id, name) }

func (a *sdkIntentAgent) send(t *testing.T) intentReply {
	t.Helper()
	var r topicStreamReply
	if a.stream {
		r = a.s.send(t, a.ctx)
	} else {
		r = topicSendUnary(t, a.ctx, a.s)
	}
	require.NoError(t, r.err, "events: %v", r.events)
	return intentReply{text: r.text, calls: r.calls}
}

// intentCase is one API driven one way: "raw" (HTTP with hand-built
// bodies, non-streaming), "unary" (the official SDK, non-streaming) or
// "stream" (the official SDK, streaming).
type intentCase struct {
	api  topicAPI
	sa   topicStreamAPI
	mode string
}

func (c intentCase) name() string { return c.api.name + "/" + c.mode }

// intentCases lists every API in each of modes.
func intentCases(modes ...string) []intentCase {
	var out []intentCase
	for _, sa := range topicStreamAPIs() {
		out = append(out, intentCasesOf(sa.name, modes...)...)
	}
	return out
}

// intentCasesOf lists the API named api in each of modes.
func intentCasesOf(api string, modes ...string) []intentCase {
	var out []intentCase
	for _, sa := range topicStreamAPIs() {
		if sa.name != api {
			continue
		}
		d, _ := kit.Lookup(api)
		for _, m := range modes {
			out = append(out, intentCase{api: newTopicAPI(d), sa: sa, mode: m})
		}
	}
	return out
}

// agent starts a conversation of session id against h. On failure the
// agent's wire traffic and the upstream requests are logged.
func (c intentCase) agent(t *testing.T, h *harness, session string) intentAgent {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range h.mock.Requests() {
				t.Logf("upstream request %d (stream=%v): %s?%s\n%s", i+1, r.Stream, r.Path, r.Query, r.Body)
			}
		}
	})
	if c.mode == "raw" {
		return &rawIntentAgent{a: kit.NewAgent(c.api.d, h.URL, map[string]string{"X-Session-Id": session})}
	}
	wire := &topicWireLog{}
	t.Cleanup(func() {
		if t.Failed() {
			wire.dump(t)
		}
	})
	s := c.sa.session(t, h.URL, map[string]string{"X-Session-Id": session}, &http.Client{Transport: wire})
	return &sdkIntentAgent{s: s, stream: c.mode == "stream", ctx: e2eCtx(t)}
}

// ---- the model's view ----

// histItem is a tool call of the model or a tool result, in the order of a
// request's history.
type histItem struct {
	call    bool // a call (else a result)
	id      string
	name    string
	args    string // calls: raw JSON arguments
	content string // results: the text
	isError bool   // results: marked as an error (Anthropic is_error, Gemini response.error)
}

// modelHistory lists the tool calls and results of an upstream request
// body, in order.
func modelHistory(t *testing.T, api string, body []byte) []histItem {
	t.Helper()
	var out []histItem
	for _, it := range kit.Get(t, api).ToolHistory(body) {
		out = append(out, histItem{call: it.Call, id: it.ID, name: it.Name, args: it.Args, content: it.Content, isError: it.IsError})
	}
	return out
}

// histIndex is the position of the call (call=true) or result with id in
// items, or -1.
func histIndex(items []histItem, call bool, id string) int {
	for i, it := range items {
		if it.call == call && it.id == id {
			return i
		}
	}
	return -1
}

// requireResult finds the result for call id in the request body and
// returns it.
func requireResult(t *testing.T, api string, body []byte, id string) histItem {
	t.Helper()
	items := modelHistory(t, api, body)
	i := histIndex(items, false, id)
	require.GreaterOrEqual(t, i, 0, "no result for call %s in the model's history: %+v", id, items)
	return items[i]
}

// requireRefusal asserts that the model's history in body holds call id
// followed by its refusal, whose text contains reason; on Anthropic and
// Gemini the result is marked as an error. It returns the positions of the
// call and the result.
func requireRefusal(t *testing.T, api string, body []byte, id, reason string) (int, int) {
	t.Helper()
	items := modelHistory(t, api, body)
	c := histIndex(items, true, id)
	r := histIndex(items, false, id)
	require.GreaterOrEqual(t, c, 0, "the refused call %s is in the model's history: %+v", id, items)
	require.Greater(t, r, c, "the refusal of %s follows the call: %+v", id, items)
	require.Contains(t, items[r].content, reason, "refusal of %s", id)
	if kit.Get(t, api).MarksErrorResults() {
		require.True(t, items[r].isError, "the refusal of %s is an error result", id)
	}
	return c, r
}

// lastHistoryItem is the raw newest message of a request body.
func lastHistoryItem(api topicAPI, body []byte) string {
	items := kit.History(api.d, body)
	if len(items) == 0 {
		return ""
	}
	return items[len(items)-1]
}

// requireCalls asserts the agent got exactly want (ids, names, JSON-equal
// arguments).
func requireCalls(t *testing.T, want, got []mock.ToolCall) {
	t.Helper()
	require.Len(t, got, len(want), "the agent's calls: %+v", got)
	for i := range want {
		require.Equal(t, want[i].ID, got[i].ID, "call %d: %+v", i, got)
		require.Equal(t, want[i].Name, got[i].Name, "call %d: %+v", i, got)
		require.JSONEq(t, want[i].Args, got[i].Args, "call %d", i)
	}
}

// requireAllAppendOnly asserts every upstream request extends the previous.
func requireAllAppendOnly(t *testing.T, api topicAPI, reqs []mock.Recorded) {
	t.Helper()
	for i := 1; i < len(reqs); i++ {
		func() {
			defer func() {
				if t.Failed() {
					t.Logf("append-only broken between upstream requests %d and %d", i, i+1)
				}
			}()
			requireAppendOnly(t, api, reqs[i-1].Body, reqs[i].Body)
		}()
	}
}

// ---- the session and the admin endpoints ----

// intentSession reads session id from the harness's store.
func intentSession(t *testing.T, h *harness, id string) *state.Session {
	t.Helper()
	sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantOfHarness(t, h, id), Session: id})
	require.NoError(t, err)
	return sess
}

// auditTrail renders an audit trail as "decision rule tool call_id intent"
// lines.
func auditTrail(entries []intents.AuditEntry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, strings.Join([]string{e.Decision, e.Rule, e.Tool, e.CallID, e.Intent}, " "))
	}
	return out
}

// auditTrailJSON is auditTrail of the sessions API's "audit" array.
func auditTrailJSON(audit gjson.Result) []string {
	out := []string{}
	for _, e := range audit.Array() {
		out = append(out, strings.Join([]string{e.Get("decision").String(), e.Get("rule").String(),
			e.Get("tool").String(), e.Get("call_id").String(), e.Get("intent").String()}, " "))
	}
	return out
}

// decisions reads shepherd_intent_decisions_total{decision,rule}.
func decisions(t *testing.T, h *harness, decision, rule string) float64 {
	t.Helper()
	return metricValue(t, h, "shepherd_intent_decisions_total", `decision="`+decision+`",rule="`+rule+`"`)
}

// policyLoads reads shepherd_intents_policy_loads_total{result}.
func policyLoads(t *testing.T, h *harness, result string) float64 {
	t.Helper()
	return metricValue(t, h, "shepherd_intents_policy_loads_total", `result="`+result+`"`)
}

// waitPolicyLoads waits until shepherd_intents_policy_loads_total{result}
// exceeds before.
func waitPolicyLoads(t *testing.T, h *harness, result string, before float64) {
	t.Helper()
	require.Eventually(t, func() bool { return policyLoads(t, h, result) > before }, 10*time.Second, 5*time.Millisecond,
		"the policy watcher did not report a %s load", result)
}

// readyz fetches /readyz.
func readyz(t *testing.T, h *harness) (int, []byte) {
	t.Helper()
	resp, b := do(t, "GET", h.URL+"/readyz", "", nil)
	return resp.StatusCode, b
}
