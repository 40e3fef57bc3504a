package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/events/feed"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// adminToken is the admin token of every proxy of these tests.
const adminToken = "console-test-token-7f3a"

// policy is the intents policy the proxies govern with: INT-001 is the
// starting intent; Bash is not allowed under it and Deploy waits for a
// person's approval.
const policy = `version: 1
current_intent_id: INT-001
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**", "tests/**"]
    constraints:
      disallow_tools: ["Bash"]
      ask_tools: ["Deploy"]
    acceptance_criteria:
      - id: AC-1
        description: "empty passwords are rejected"
        status: pending
`

// shepherd is one real proxy under test: the model routes on URL, the
// admin endpoints (and the console) on Admin, in front of Mock.
type shepherd struct {
	URL, Admin string
	Mock       *mock.Server
	Store      state.Store
	Workdir    string
}

// shepherdOptions tune startShepherd.
type shepherdOptions struct {
	// Store is the state store (default: a memory store).
	Store state.Store
	// Mock is the provider (default: a new scripted mock).
	Mock *mock.Server
	// Config changes the config before it is validated.
	Config func(*config.Config)
}

// startShepherd starts a proxy with topics and intents on, a dedicated
// admin listener and an admin token; it stops when the test ends.
func startShepherd(t *testing.T, o shepherdOptions) *shepherd {
	t.Helper()
	m := o.Mock
	if m == nil {
		m = kit.StartMock(t, mock.Options{})
	}
	work := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(work, ".orchestration"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, ".orchestration", "active_intents.yaml"), []byte(policy), 0o644))

	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Listen = "127.0.0.1:0"
	cfg.Admin.Listen = "127.0.0.1:0"
	cfg.Admin.Token = adminToken
	cfg.Topics.Enabled = true
	cfg.Recovery.Enabled = true
	cfg.Intents.Enabled = config.SwitchOn
	cfg.Intents.WorkspaceRoot = work
	cfg.Intents.ApprovalTimeout = 30 * time.Second
	cfg.Intents.ApprovalPoll = 20 * time.Millisecond
	cfg.Events.PollInterval = 50 * time.Millisecond // another replica's events
	if o.Config != nil {
		o.Config(&cfg)
	}
	require.NoError(t, cfg.Validate())

	st := o.Store
	if st == nil {
		st = state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})
	}
	metrics := proxy.NewMetrics()
	log := zap.NewNop()
	if os.Getenv("SHEPHERD_CONSOLE_LOG") != "" {
		log, _ = zap.NewDevelopment()
	}
	// The live feed, as cmd/shepherd builds it: a publisher over the
	// store's event log.
	var em events.Emitter = events.Nop{}
	closeFeed := func() {}
	if el, ok := st.(state.EventLog); ok && cfg.Events.Enabled {
		pub, err := feed.New(feed.Options{Log: el, Logger: log})
		require.NoError(t, err)
		em = pub
		closeFeed = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_ = pub.Close(ctx)
		}
	}
	features, err := proxy.BuildFeaturesWithEvents(&cfg, metrics, log, em)
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics, Features: features, Events: em})
	require.NoError(t, err)
	ln, aln := kit.Listen(t), kit.Listen(t)
	served := make(chan struct{}, 2)
	go func() { _ = srv.Serve(ln); served <- struct{}{} }()
	go func() { _ = srv.ServeAdmin(aln); served <- struct{}{} }()
	t.Cleanup(func() {
		// The browser may hold an unused connection open on the admin
		// listener: Shutdown waits for it until ctx is done.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		<-served
		_ = features.Close()
		closeFeed()
		_ = st.Close()
	})
	return &shepherd{URL: "http://" + ln.Addr().String(), Admin: "http://" + aln.Addr().String(), Mock: m, Store: st, Workdir: work}
}

// agent is a raw-HTTP Anthropic Messages conversation through s in
// session id (X-Session-Id), as Claude Code (its User-Agent) on a priced
// model, declaring the tools Read, Bash, Write and Deploy.
func (s *shepherd) agent(t *testing.T, id string) *kit.Agent {
	a := kit.NewAgent(kit.Get(t, "anthropic"), s.URL, map[string]string{"X-Session-Id": id, "User-Agent": "claude-cli/2.1.0 (external, cli)"})
	a.Request.Model = "claude-sonnet-4-5"
	a.Request.Tools = append(a.Request.Tools,
		kit.Tool{Name: "Bash", Description: "Run a command", Schema: `{"type":"object"}`},
		kit.Tool{Name: "Write", Description: "Write a file", Schema: `{"type":"object"}`},
		kit.Tool{Name: "Deploy", Description: "Deploy the service", Schema: `{"type":"object"}`})
	return a
}

// turnResult is one agent turn sent off the test goroutine.
type turnResult struct {
	reply kit.Reply
	err   error
}

// sendAsync sends a's next turn (non-streaming) in a goroutine, for a turn
// that waits on a person, and delivers what the agent got.
func sendAsync(a *kit.Agent) <-chan turnResult {
	body := a.Body()
	url := a.URL + a.D.Path(a.Request.Model, a.Request.Stream)
	hdr := a.D.Headers()
	for k, v := range a.Header {
		hdr[k] = v
	}
	ch := make(chan turnResult, 1)
	go func() {
		var r turnResult
		defer func() { ch <- r }()
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			r.err = err
			return
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := kit.Client.Do(req)
		if err != nil {
			r.err = err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			r.err = err
			return
		}
		if resp.StatusCode != http.StatusOK {
			r.err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
			return
		}
		r.reply, r.err = a.D.ParseReply(b)
	}()
	return ch
}

// wait waits for a turn sent with sendAsync.
func wait(t *testing.T, ch <-chan turnResult, within time.Duration) kit.Reply {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return r.reply
	case <-time.After(within):
		t.Fatalf("the agent's turn did not end within %s", within)
		return kit.Reply{}
	}
}

// api GETs an admin API path of s with the token and returns the body.
func (s *shepherd) api(t *testing.T, path string) []byte {
	t.Helper()
	resp, body := kit.Do(t, "GET", s.Admin+path, "", map[string]string{"Authorization": "Bearer " + adminToken})
	require.Equal(t, 200, resp.StatusCode, "%s: %s", path, body)
	return body
}
