package proxy_test

// End-to-end tests of held calls (docs/approvals.md): an intents policy
// with an ask rule, a real shepherd, the mock provider, an official SDK
// (or a raw HTTP client, to see the bytes) as the agent, and a person
// deciding through the approvals API from another goroutine.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// askPolicy asks before Bash and disallows Write (for observe mode); its
// intent is current, so a new session works under it at once.
const askPolicy = `version: 1
current_intent_id: INT-001
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**"]
    constraints:
      disallow_tools: ["Write"]
      ask_tools: ["Bash"]
`

const askBashArgs = `{"command":"ls src"}`

// askHarness starts a governed harness over st (nil: memory) with fast
// approval timings, then mods.
func askHarness(t *testing.T, st state.Store, mods ...func(*config.Config)) *harness {
	t.Helper()
	dir := intentWorkspace(t, askPolicy)
	if st == nil {
		st = state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	}
	fast := func(c *config.Config) {
		c.Intents.ApprovalTimeout = 10 * time.Second
		c.Intents.ApprovalPoll = 10 * time.Millisecond
		c.Intents.KeepAlive = 50 * time.Millisecond
	}
	return newHarness(t, harnessOptions{Store: st, Config: intentsOn(dir, append([]func(*config.Config){fast}, mods...)...)})
}

func askClient(h *harness) anthropic.Client { return e2eAnthropicClient(h.URL) }

func askParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-e2e",
		MaxTokens: 1024,
		Tools: []anthropic.ToolUnionParam{
			{OfTool: &anthropic.ToolParam{Name: "Bash", InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"command": map[string]any{"type": "string"}}}}},
			{OfTool: &anthropic.ToolParam{Name: "Write", InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"file_path": map[string]any{"type": "string"}}}}},
		},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("List the sources"))},
	}
}

// bashReply is the model's reply with one Bash call.
func bashReply(id string) mock.Reply {
	return mock.Reply{ID: id, Text: "Listing the sources.", ToolCalls: []mock.ToolCall{{ID: "b1", Name: "Bash", Args: askBashArgs}}}
}

// decision is what a person did through the approvals API.
type decision struct {
	listed  string // GET /shepherd/v1/approvals while held
	session string // GET /shepherd/v1/sessions/{id}/approvals while held
	status  int
	body    string
	err     error
}

// decideWhenHeld waits (off the test goroutine) for a pending approval on
// base's approvals API, then decides it after delay.
func decideWhenHeld(base, session, verdict, note string, delay time.Duration) <-chan decision {
	ch := make(chan decision, 1)
	go func() {
		var d decision
		defer func() { ch <- d }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := get(base + "/shepherd/v1/approvals")
			if err != nil {
				d.err = err
				return
			}
			if n := gjson.GetBytes(b, "approvals.#").Int(); n > 0 {
				d.listed = string(b)
				break
			}
			if time.Now().After(deadline) {
				d.err = fmt.Errorf("no approval held: %s", b)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		b, err := get(base + "/shepherd/v1/sessions/" + session + "/approvals")
		if err != nil {
			d.err = err
			return
		}
		d.session = string(b)
		time.Sleep(delay)
		id := gjson.Get(d.listed, "approvals.0.id").String()
		body, _ := json.Marshal(map[string]string{"decision": verdict, "note": note})
		resp, err := kit.Client.Post(base+"/shepherd/v1/sessions/"+session+"/approvals/"+id, "application/json", bytes.NewReader(body))
		if err != nil {
			d.err = err
			return
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		d.status, d.body = resp.StatusCode, string(rb)
	}()
	return ch
}

func get(url string) ([]byte, error) {
	resp, err := kit.Client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Approved: the streaming SDK agent receives the held Bash call once a
// person approves it through the API; the approval named the exact call.
func TestApprovalsApprovedStreamingSDK(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil)
	h.mock.Script(bashReply("m1"))
	decided := decideWhenHeld(h.URL, "ask-approve", "approve", "", 0)
	r := e2eRunAnthropicStream(t, e2eCtx(t), askClient(h), askParams(), aoption.WithHeader("X-Session-Id", "ask-approve"))
	require.NoError(t, r.err)
	d := <-decided
	require.NoError(t, d.err)
	require.Equal(t, http.StatusOK, d.status, d.body)
	require.Equal(t, "approved", gjson.Get(d.body, "decision").String())
	require.Equal(t, "api", gjson.Get(d.body, "by").String())

	a := gjson.Get(d.listed, "approvals.0")
	require.Equal(t, "ask-approve", a.Get("session").String())
	require.Equal(t, "Bash", a.Get("tool").String())
	require.Equal(t, "b1", a.Get("call_id").String())
	require.JSONEq(t, askBashArgs, a.Get("args").String())
	require.Equal(t, intents.RuleAskTools, a.Get("rule").String())
	require.Equal(t, "INT-001", a.Get("intent").String())
	require.Contains(t, a.Get("reason").String(), `ask_tools entry "Bash"`)
	require.Equal(t, turn.ApprovalID("ask-approve", "b1", "Bash", []byte(askBashArgs)), a.Get("id").String())
	require.Equal(t, a.Get("id").String(), gjson.Get(d.session, "approvals.0.id").String())

	var calls []string
	for _, b := range r.msg.Content {
		if b.Type == "tool_use" {
			calls = append(calls, b.ID+":"+b.Name+":"+string(b.Input))
		}
	}
	require.Equal(t, []string{"b1:Bash:" + askBashArgs}, calls)
	require.Equal(t, anthropic.StopReasonToolUse, r.msg.StopReason)
	require.Len(t, h.mock.Requests(), 1, "an approved call goes to the agent: no follow-up")

	// Decided once: a second decision is a conflict.
	resp, body := do(t, "POST", h.URL+"/shepherd/v1/sessions/ask-approve/approvals/"+a.Get("id").String(), `{"decision":"deny"}`, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(body))
	require.Equal(t, "approved", gjson.GetBytes(body, "approval.decision").String())
}

// Denied: the SDK agent never sees the call; the model gets the refusal
// with the person's note in the follow-up request.
func TestApprovalsDeniedSDK(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil)
	h.mock.Script(bashReply("m1"), mock.Reply{ID: "m2", Text: "Understood, I will not list them."})
	decided := decideWhenHeld(h.URL, "ask-deny", "deny", "not now, please", 0)
	c := askClient(h)
	msg, err := c.Messages.New(e2eCtx(t), askParams(), aoption.WithHeader("X-Session-Id", "ask-deny"))
	require.NoError(t, err)
	d := <-decided
	require.NoError(t, d.err)
	require.Equal(t, http.StatusOK, d.status, d.body)
	for _, b := range msg.Content {
		require.NotEqual(t, "tool_use", b.Type, "the denied call never reaches the agent")
	}
	reqs := h.mock.Requests()
	require.Len(t, reqs, 2)
	_, res := requireRefusal(t, "anthropic", reqs[1].Body, "b1", turn.ReasonDenied)
	require.Contains(t, modelHistory(t, "anthropic", reqs[1].Body)[res].content, "not now, please")
}

// Expired: nobody decides; the model is told "not approved in time".
func TestApprovalsExpired(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil, func(c *config.Config) { c.Intents.ApprovalTimeout = 300 * time.Millisecond })
	h.mock.Script(bashReply("m1"), mock.Reply{ID: "m2", Text: "Nobody answered."})
	start := time.Now()
	c := askClient(h)
	msg, err := c.Messages.New(e2eCtx(t), askParams(), aoption.WithHeader("X-Session-Id", "ask-expire"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 225*time.Millisecond, "held until (just before) the expiry")
	for _, b := range msg.Content {
		require.NotEqual(t, "tool_use", b.Type)
	}
	reqs := h.mock.Requests()
	require.Len(t, reqs, 2)
	requireRefusal(t, "anthropic", reqs[1].Body, "b1", turn.ReasonNotApproved)
	_, body := do(t, "GET", h.URL+"/shepherd/v1/approvals", "", nil)
	require.Equal(t, int64(0), gjson.GetBytes(body, "approvals.#").Int(), "nothing pending: %s", body)
	// The store shows who ended it.
	list, err := h.store.List(context.Background(), "", 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	a, err := h.store.(state.Approvals).GetApproval(context.Background(), state.Key{Tenant: list[0].Tenant, Session: "ask-expire"},
		turn.ApprovalID("ask-expire", "b1", "Bash", []byte(askBashArgs)))
	require.NoError(t, err)
	requireTimedOut(t, a)
}

// requireTimedOut asserts that a ended by timeout: denied by "timeout"
// (the store takes the holder's denial however late its timer fired).
func requireTimedOut(t *testing.T, a state.Approval) {
	t.Helper()
	require.Equal(t, state.ApprovalDenied, a.Decision)
	require.Equal(t, turn.ByTimeout, a.By)
}

// While a call is held, the stream carries SSE comment lines, flushed:
// the raw bytes show them before the released call.
func TestApprovalsKeepAliveBytes(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil)
	h.mock.Script(bashReply("m1"))
	decided := decideWhenHeld(h.URL, "ask-keepalive", "approve", "", 400*time.Millisecond)
	body := `{"model":"claude-e2e","max_tokens":1024,"stream":true,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"List the sources"}]}`
	hdr := anthropicHeaders()
	hdr["X-Session-Id"] = "ask-keepalive"
	req, err := http.NewRequest("POST", h.URL+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := kit.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	// Read as it comes: the text arrives before the decision, the
	// comments while waiting, the call after it.
	var raw []byte
	buf := make([]byte, 4096)
	firstComment := time.Time{}
	for {
		n, err := resp.Body.Read(buf)
		raw = append(raw, buf[:n]...)
		if firstComment.IsZero() && bytes.Contains(raw, []byte(": keepalive\n\n")) {
			firstComment = time.Now()
		}
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	d := <-decided
	require.NoError(t, d.err)
	require.Equal(t, 200, d.status, d.body)
	s := string(raw)
	ka := strings.Index(s, ": keepalive\n\n")
	text := strings.Index(s, "Listing")
	call := strings.Index(s, `"id":"b1"`)
	require.Positive(t, ka, s)
	require.Positive(t, text, s)
	require.Positive(t, call, s)
	require.Less(t, text, ka, "the text streamed before the hold")
	require.Less(t, ka, call, "comments while held, the call after the approval")
	require.GreaterOrEqual(t, strings.Count(s, ": keepalive\n\n"), 3, "one every 50ms over 400ms")
	require.Contains(t, s, "event: message_stop")
	require.False(t, firstComment.IsZero())
}

// The agent leaves while its call is held: the approval is denied by
// shepherd at once (within a keepalive), not left pending.
func TestApprovalsClientLeaves(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil)
	h.mock.Script(bashReply("m1"))
	ctx, cancel := context.WithCancel(e2eCtx(t))
	defer cancel()
	tenant := make(chan string, 1)
	go func() {
		for range 2000 {
			b, _ := get(h.URL + "/shepherd/v1/approvals")
			if gjson.GetBytes(b, "approvals.#").Int() > 0 {
				tenant <- gjson.GetBytes(b, "approvals.0.tenant").String()
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(tenant)
	}()
	r := e2eRunAnthropicStream(t, ctx, askClient(h), askParams(), aoption.WithHeader("X-Session-Id", "ask-leave"))
	require.Error(t, r.err)
	key := state.Key{Tenant: <-tenant, Session: "ask-leave"}
	id := turn.ApprovalID("ask-leave", "b1", "Bash", []byte(askBashArgs))
	apps := h.store.(state.Approvals)
	require.Eventually(t, func() bool {
		a, err := apps.GetApproval(context.Background(), key, id)
		return err == nil && a.Decision == state.ApprovalDenied && a.By == turn.ByShepherd
	}, 5*time.Second, 20*time.Millisecond)
}

// Observe mode: a call enforce would refuse reaches the agent, and the
// session's audit records it as would_refuse.
func TestApprovalsObserveMode(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil, func(c *config.Config) { c.Intents.Mode = intents.ModeObserve })
	h.mock.Script(mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
		{ID: "w1", Name: "Write", Args: `{"file_path":"src/a.go","content":"x"}`},
		{ID: "b1", Name: "Bash", Args: askBashArgs},
	}})
	c := askClient(h)
	msg, err := c.Messages.New(e2eCtx(t), askParams(), aoption.WithHeader("X-Session-Id", "ask-observe"))
	require.NoError(t, err)
	var got []string
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			got = append(got, b.ID)
		}
	}
	require.Equal(t, []string{"w1", "b1"}, got, "observe mode blocks nothing and holds nothing")
	require.Len(t, h.mock.Requests(), 1)
	require.Eventually(t, func() bool {
		_, b := do(t, "GET", h.URL+"/shepherd/v1/sessions/ask-observe", "", nil)
		return gjson.GetBytes(b, `audit.#(call_id=="w1").decision`).String() == intents.DecisionWouldRefuse &&
			gjson.GetBytes(b, `audit.#(call_id=="b1").decision`).String() == intents.DecisionWouldAsk
	}, 5*time.Second, 20*time.Millisecond)
}

// The API's refusals: bad bodies, unknown approvals, wrong methods, the
// admin token.
func TestApprovalsAPIErrors(t *testing.T) {
	t.Parallel()
	h := askHarness(t, nil, func(c *config.Config) { c.Admin.Token = "sekret" })
	auth := map[string]string{"Authorization": "Bearer sekret"}
	resp, _ := do(t, "GET", h.URL+"/shepherd/v1/approvals", "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, b := do(t, "GET", h.URL+"/shepherd/v1/approvals", "", auth)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"approvals":[]}`, string(b))
	resp, _ = do(t, "POST", h.URL+"/shepherd/v1/sessions/s/approvals/x", `{"decision":"approve"}`, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	for _, bad := range []string{`nope`, `{"decision":"maybe"}`, `{"decision":"approve","by":"bot"}`, `{"decision":"approve","extra":1}`} {
		resp, b = do(t, "POST", h.URL+"/shepherd/v1/sessions/s/approvals/x", bad, auth)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", bad, b)
	}
	resp, _ = do(t, "POST", h.URL+"/shepherd/v1/sessions/s/approvals/x", `{"decision":"approve"}`, auth)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = do(t, "POST", h.URL+"/shepherd/v1/sessions/s/approvals/x?tenant=t", `{"decision":"approve"}`, auth)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = do(t, "GET", h.URL+"/shepherd/v1/sessions/s/approvals/x", "", auth)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, _ = do(t, "POST", h.URL+"/shepherd/v1/approvals", "", auth)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, _ = do(t, "POST", h.URL+"/shepherd/v1/sessions/s", "", auth)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "the sessions API stays GET only")
}

// Two replicas on one Redis: the call is held on A, a person decides on
// B's API, and A releases (approve) or refuses (deny) it.
func TestApprovalsAcrossReplicasRedis(t *testing.T) {
	url := kit.RedisURL(t)
	for _, verdict := range []string{"approve", "deny"} {
		t.Run(verdict, func(t *testing.T) {
			prefix := fmt.Sprintf("shepherd-asktest-%s-%d", verdict, time.Now().UnixNano())
			t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
			open := func() state.Store {
				st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
				require.NoError(t, err)
				return st
			}
			a := askHarness(t, open())
			b := askHarness(t, open())
			a.mock.Script(bashReply("m1"), mock.Reply{ID: "m2", Text: "Understood."})
			session := "ask-replicas-" + verdict
			decided := decideWhenHeld(b.URL, session, verdict, "decided on B", 0)
			r := e2eRunAnthropicStream(t, e2eCtx(t), askClient(a), askParams(), aoption.WithHeader("X-Session-Id", session))
			require.NoError(t, r.err)
			d := <-decided
			require.NoError(t, d.err)
			require.Equal(t, http.StatusOK, d.status, d.body)
			require.Equal(t, "b1", gjson.Get(d.listed, "approvals.0.call_id").String(), "B lists the call A holds")
			var calls []string
			for _, blk := range r.msg.Content {
				if blk.Type == "tool_use" {
					calls = append(calls, blk.ID)
				}
			}
			reqs := a.mock.Requests()
			if verdict == "approve" {
				require.Equal(t, []string{"b1"}, calls)
				require.Len(t, reqs, 1)
				return
			}
			require.Empty(t, calls)
			require.Len(t, reqs, 2)
			_, res := requireRefusal(t, "anthropic", reqs[1].Body, "b1", turn.ReasonDenied)
			require.Contains(t, modelHistory(t, "anthropic", reqs[1].Body)[res].content, "decided on B")
		})
	}
}

// Every API's official SDK, streaming, reads through the keepalive
// comments of a held call and receives the call once approved.
func TestApprovalsKeepAliveEverySDK(t *testing.T) {
	for _, c := range intentCases("stream") {
		t.Run(c.api.name, func(t *testing.T) {
			t.Parallel()
			h := askHarness(t, nil, func(cfg *config.Config) { cfg.Intents.KeepAlive = 20 * time.Millisecond })
			session := "ask-sdk-" + c.api.name
			a := c.agent(t, h, session)
			a.user("List the sources")
			h.mock.Script(bashReply("m1"))
			decided := decideWhenHeld(h.URL, session, "approve", "", 200*time.Millisecond)
			r := a.send(t)
			d := <-decided
			require.NoError(t, d.err)
			require.Equal(t, http.StatusOK, d.status, d.body)
			requireCalls(t, []mock.ToolCall{{ID: "b1", Name: "Bash", Args: askBashArgs}}, r.calls)
		})
	}
}
