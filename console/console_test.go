package console

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
	"github.com/shepherd-proxy/shepherd/state"
)

// fakeStore is a memory store with a minimal event log and approvals, so
// these tests do not depend on the stores' implementations of them.
type fakeStore struct {
	*state.Memory
	mu   sync.Mutex
	evs  map[state.Key][]state.EventRecord
	appr []state.Approval
}

func newFakeStore() *fakeStore {
	return &fakeStore{Memory: state.NewMemory(state.MemoryOptions{}), evs: map[state.Key][]state.EventRecord{}}
}

func (f *fakeStore) AppendEvents(_ context.Context, key state.Key, recs [][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		f.evs[key] = append(f.evs[key], state.EventRecord{ID: fmt.Sprintf("1-%d", len(f.evs[key])), Data: r})
	}
	return nil
}

func (f *fakeStore) SessionEvents(_ context.Context, key state.Key, after string, limit int) ([]state.EventRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []state.EventRecord
	for _, r := range f.evs[key] {
		if after != "" && r.ID <= after {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

func (f *fakeStore) AllEvents(context.Context, string, int) ([]state.EventRecord, error) {
	return nil, nil
}

func (f *fakeStore) HoldApproval(_ context.Context, _ state.Key, a state.Approval) error {
	f.appr = append(f.appr, a)
	return nil
}

func (f *fakeStore) DecideApproval(context.Context, state.Key, string, string, string, string) (state.Approval, error) {
	return state.Approval{}, state.ErrNotFound
}

func (f *fakeStore) GetApproval(context.Context, state.Key, string) (state.Approval, error) {
	return state.Approval{}, state.ErrNotFound
}

func (f *fakeStore) PendingApprovals(_ context.Context, tenant string, _ int) ([]state.Approval, error) {
	var out []state.Approval
	for _, a := range f.appr {
		if tenant == "" || a.Tenant == tenant {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeStore) emit(t *testing.T, key state.Key, typ events.Type, at time.Time, data map[string]any) {
	t.Helper()
	b, err := json.Marshal(events.Event{Type: typ, At: at, Session: key.Session, Tenant: key.Tenant, Data: data})
	require.NoError(t, err)
	require.NoError(t, f.AppendEvents(context.Background(), key, [][]byte{b}))
}

// get serves one request through h.
func get(h *Handler, uri string, header ...string) (int, string, *fasthttp.ResponseHeader) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI(uri)
	for i := 0; i+1 < len(header); i += 2 {
		ctx.Request.Header.Set(header[i], header[i+1])
	}
	h.Serve(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Body()), &ctx.Response.Header
}

const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

var t0 = time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)

// seeded stores one session with two chapters, a refusal, a held call and
// two turns, and returns the store and the session key.
func seeded(t *testing.T) (*fakeStore, state.Key) {
	st := newFakeStore()
	key := state.Key{Tenant: "tenant1", Session: "sess-1"}
	_, err := st.Update(context.Background(), key, func(s *state.Session) error {
		s.Requests, s.Agent, s.Model = 3, "claude-code", "claude-sonnet-4-5"
		s.Usage = state.Usage{Turns: 3, InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 3600, CacheWriteTokens: 1200, CostUSD: 0.0123}
		s.Slots = state.Slots{
			topics.Name: &topics.State{Topic: "Fix " + hostile, Chapters: []topics.Chapter{
				{Title: "Research the login flow", StartedAt: t0, Calls: []topics.CallNote{{Name: "Read", ID: "c1", At: t0.Add(time.Second)}}},
				{Title: "Fix " + hostile, StartedAt: t0.Add(time.Minute)},
			}},
			intents.Name: &intents.State{Intent: "INT-001", Audit: []intents.AuditEntry{
				{At: t0.Add(61 * time.Second), Tool: "Bash", CallID: "c2", Decision: intents.DecisionRefused, Rule: "disallow_tools", Reason: "Bash is not allowed " + hostile},
			}},
		}
		return nil
	})
	require.NoError(t, err)
	st.emit(t, key, events.IntentSelected, t0.Add(time.Second), map[string]any{"intent": "INT-001", "description": "Fix the login bug",
		"criteria": []string{"empty passwords are rejected"}})
	st.emit(t, key, events.RequestFinished, t0.Add(2*time.Second), map[string]any{"status": 200, "model": "claude-sonnet-4-5",
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 50, "cache_read_tokens": 300, "cache_write_tokens": 100}, "cost_usd": 0.001})
	st.emit(t, key, events.CallHeld, t0.Add(62*time.Second), map[string]any{"approval": "ap1", "tool": "Write", "call_id": "c3", "reason": "writes outside scope"})
	st.emit(t, key, events.Continuation, t0.Add(63*time.Second), map[string]any{"attempt": 1, "stop": "max_tokens"})
	require.NoError(t, st.HoldApproval(context.Background(), key, state.Approval{ID: "ap1", Session: key.Session, Tenant: key.Tenant,
		CallID: "c3", Tool: "Write", Args: `{"path":"/etc/passwd","content":"` + hostile + `"}`, Intent: "INT-001",
		Reason: "writes outside scope", HeldAt: t0.Add(62 * time.Second), ExpiresAt: t0.Add(5 * time.Minute)}))
	return st, key
}

func newTestHandler(st state.Store, token string) *Handler {
	return New(Options{Store: st, Now: func() time.Time { return t0.Add(2 * time.Minute) },
		Authorized: func(ctx *fasthttp.RequestCtx) bool {
			return token == "" || string(ctx.Request.Header.Peek("Authorization")) == "Bearer "+token
		}})
}

// TestShellsNeedNoTokenAndCarryNoData: the pages load without a token and
// hold nothing of the store; every data fragment needs the token.
func TestShellsNeedNoTokenAndCarryNoData(t *testing.T) {
	st, _ := seeded(t)
	h := newTestHandler(st, "s3cret")
	for _, uri := range []string{"/console/", "/console/sessions/sess-1?tenant=tenant1"} {
		code, body, hd := get(h, uri)
		require.Equal(t, 200, code, uri)
		require.Contains(t, string(hd.ContentType()), "text/html")
		require.Contains(t, string(hd.Peek("Content-Security-Policy")), "script-src 'self'")
		require.NotContains(t, body, "Research the login flow", uri)
		require.NotContains(t, body, "claude-code", uri)
		require.Contains(t, body, `id="token-form"`)
	}
	code, _, hd := get(h, "/console")
	require.Equal(t, 302, code)
	require.Contains(t, string(hd.Peek("Location")), "/console/")

	for _, uri := range []string{"/console/f/sessions", "/console/f/sessions/sess-1", "/console/f/approvals"} {
		code, body, _ := get(h, uri)
		require.Equal(t, 401, code, uri)
		require.NotContains(t, body, "sess-1")
		code, _, _ = get(h, uri, "Authorization", "Bearer wrong")
		require.Equal(t, 401, code, uri)
		code, _, hd := get(h, uri, "Authorization", "Bearer s3cret")
		require.Equal(t, 200, code, uri)
		require.Equal(t, "no-store", string(hd.Peek("Cache-Control")))
	}
}

// TestSessionFragment: what a person sees of one session, everything from
// the agent escaped.
func TestSessionFragment(t *testing.T) {
	st, _ := seeded(t)
	h := newTestHandler(st, "")
	code, body, _ := get(h, "/console/f/sessions/sess-1")
	require.Equal(t, 200, code)
	for _, want := range []string{
		"Research the login flow",                             // chapter 1
		"Fix &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", // chapter 2, escaped
		"Bash is not allowed &lt;script&gt;",                  // the refusal reason, escaped
		`class="badge refused"`, "disallow_tools",             // marked refused, with its rule
		`class="badge held"`, "writes outside scope", // the held call
		"continuation attempt 1",                                       // continuation marked
		"cache hit 60%",                                                // 300 / (100+300+100)
		"INT-001", "Fix the login bug", "empty passwords are rejected", // intent and criteria
		"claude-code", "$0.0123", "3,600",
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "<script>")
	require.NotContains(t, body, "<img")
	// The refusal is under chapter 2 (it came after chapter 2 started), the
	// first turn under chapter 1.
	ch2 := strings.Index(body, `class="chapter-title">Fix &lt;script&gt;`)
	require.Positive(t, ch2)
	require.Greater(t, strings.Index(body, "Bash is not allowed"), ch2)
	require.Less(t, strings.Index(body, "cache hit 60%"), ch2)

	code, body, _ = get(h, "/console/f/sessions/nope")
	require.Equal(t, 404, code)
	require.Contains(t, body, "No session")
}

// TestSessionsFragmentFilters: the list shows every column and filters by
// search text, agent and refusals.
func TestSessionsFragmentFilters(t *testing.T) {
	st, _ := seeded(t)
	_, err := st.Update(context.Background(), state.Key{Tenant: "tenant2", Session: "other"}, func(s *state.Session) error {
		s.Agent, s.Model = "codex", "gpt-5"
		return nil
	})
	require.NoError(t, err)
	h := newTestHandler(st, "")
	_, body, _ := get(h, "/console/f/sessions")
	require.Contains(t, body, "sess-1")
	require.Contains(t, body, "other")
	require.Contains(t, body, `href="/console/sessions/sess-1?tenant=tenant1"`)
	require.Contains(t, body, "1,200")
	require.Contains(t, body, `<option value="codex">`)
	require.NotContains(t, body, "<script>")

	for q, want := range map[string]string{"q=CLAUDE": "sess-1", "agent=codex": "other", "refused=1": "sess-1", "q=fix%20%3Cscript": "sess-1"} {
		_, body, _ := get(h, "/console/f/sessions?"+q)
		require.Contains(t, body, `data-session="`+want+`"`, q)
		require.Equal(t, 1, strings.Count(body, "data-session="), q)
	}
	_, body, _ = get(h, "/console/f/sessions?q=nothing-matches")
	require.Contains(t, body, "No session matches")
}

// TestApprovalsFragment: a pending approval shows its tool, arguments
// (escaped), intent, reason, time left and the API URL its buttons post to.
func TestApprovalsFragment(t *testing.T) {
	st, _ := seeded(t)
	h := newTestHandler(st, "")
	for _, uri := range []string{"/console/f/approvals", "/console/f/approvals?session=sess-1&tenant=tenant1"} {
		_, body, _ := get(h, uri)
		require.Contains(t, body, `data-approval="ap1"`, uri)
		require.Contains(t, body, "Write")
		require.Contains(t, body, "/etc/passwd")
		require.Contains(t, body, "&lt;script&gt;")
		require.NotContains(t, body, "<script>")
		require.Contains(t, body, "INT-001")
		require.Contains(t, body, "writes outside scope")
		require.Contains(t, body, `data-expires="2026-11-25T22:05:00Z"`) // the script counts down to it
		require.Contains(t, body, `data-action="/shepherd/v1/sessions/sess-1/approvals/ap1?tenant=tenant1"`)
	}
	_, body, _ := get(h, "/console/f/approvals?session=other")
	require.NotContains(t, body, "ap1")

	// A store without approvals says so on the list page.
	h = newTestHandler(struct{ state.Store }{state.NewMemory(state.MemoryOptions{})}, "")
	_, body, _ = get(h, "/console/f/approvals")
	require.Contains(t, body, "keeps no approvals")
}

// TestStatic: the script and stylesheet are served with their types; no
// other path is.
func TestStatic(t *testing.T) {
	h := newTestHandler(newFakeStore(), "tok")
	code, body, hd := get(h, "/console/static/console.js")
	require.Equal(t, 200, code)
	require.Contains(t, string(hd.ContentType()), "javascript")
	require.Contains(t, body, "sessionStorage")
	code, _, hd = get(h, "/console/static/console.css")
	require.Equal(t, 200, code)
	require.Contains(t, string(hd.ContentType()), "text/css")
	for _, uri := range []string{"/console/static/", "/console/static/../console.go", "/console/nope", "/console/sessions/"} {
		code, _, _ = get(h, uri)
		require.Equal(t, 404, code, uri)
	}
	require.True(t, IsPath([]byte("/console")))
	require.True(t, IsPath([]byte("/console/x")))
	require.False(t, IsPath([]byte("/consoles")))
}

// TestSessionShowsWhatIsNotKept: a session past its topics bounds numbers
// its chapters after the dropped ones and says what it no longer keeps.
func TestSessionShowsWhatIsNotKept(t *testing.T) {
	st := newFakeStore()
	key := state.Key{Tenant: "t", Session: "long"}
	_, err := st.Update(context.Background(), key, func(s *state.Session) error {
		s.SetSlot(topics.Name, &topics.State{Topic: "Ship", ChaptersDropped: 7, CallsDropped: 250, Chapters: []topics.Chapter{
			{Title: "Test", StartedAt: t0}, {Title: "Ship", StartedAt: t0.Add(time.Minute)},
		}})
		return nil
	})
	require.NoError(t, err)
	code, body, _ := get(newTestHandler(st, ""), "/console/f/sessions/long?tenant=t")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "the oldest 7 chapters and 250 tool calls")
	require.Regexp(t, `chapter-no">8</span>\s*<h3 class="chapter-title">Test`, body)
	require.Regexp(t, `chapter-no">9</span>\s*<h3 class="chapter-title">Ship`, body)
}
