package agents

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events/feed"
	"github.com/shepherd-proxy/shepherd/pricing"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// feedStackOptions tune a console stack.
type feedStackOptions struct {
	// Policy is written to .orchestration/active_intents.yaml (intents on).
	Policy string
	// ApprovalTimeout bounds a held call's wait.
	ApprovalTimeout time.Duration
	// KeepAlive is intents.keepalive (0: 250ms).
	KeepAlive time.Duration
}

// newFeedStack is newStack wired like cmd/shepherd wires the console: the
// live event feed (a feed.Publisher over the memory store's event log, given
// to the features and the proxy), list prices, topics and intents on, with
// short approval poll and keepalive intervals so held calls are decided and
// kept alive quickly. Admin endpoints share the proxy listener.
func newFeedStack(t *testing.T, d driver, o feedStackOptions) *stack {
	t.Helper()
	s := &stack{Workdir: t.TempDir()}
	s.mock = kit.StartMock(t, mock.Options{
		ChunkSize: 24,
		Models:    []string{"claude-sonnet-4-5", "gpt-5-codex", "gemini-2.5-flash"},
		Responder: func(req mock.Recorded) (mock.Reply, bool) {
			s.mu.Lock()
			r := s.respond
			s.mu.Unlock()
			if r == nil {
				return mock.Reply{}, false
			}
			return r(req, isMainTurn(d, req)), true
		},
	})

	cfg := config.Defaults()
	cfg.Upstreams.Anthropic = s.mock.URL()
	cfg.Upstreams.OpenAI = s.mock.URL()
	cfg.Upstreams.Gemini = s.mock.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Topics.Enabled = true
	cfg.Events.Enabled = true
	cfg.Events.PollInterval = 50 * time.Millisecond
	cfg.Events.Heartbeat = time.Second
	dir := filepath.Join(s.Workdir, ".orchestration")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "active_intents.yaml"), []byte(o.Policy), 0o644))
	cfg.Intents.Enabled = config.SwitchOn
	cfg.Intents.WorkspaceRoot = s.Workdir
	cfg.Intents.ApprovalTimeout = o.ApprovalTimeout
	cfg.Intents.ApprovalPoll = 50 * time.Millisecond
	cfg.Intents.KeepAlive = 250 * time.Millisecond
	if o.KeepAlive > 0 {
		cfg.Intents.KeepAlive = o.KeepAlive
	}
	require.NoError(t, cfg.Validate())

	st := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour,
		EventsPerSession: cfg.Events.PerSession, EventsGlobal: cfg.Events.Global})
	metrics := proxy.NewMetrics()
	log := zap.NewNop()
	if os.Getenv("SHEPHERD_AGENTS_LOG") != "" {
		log, _ = zap.NewDevelopment()
	}
	pub, err := feed.New(feed.Options{Log: st, Queue: cfg.Events.Queue, Metrics: metrics.Registry, Logger: log})
	require.NoError(t, err)
	features, err := proxy.BuildFeaturesWithEvents(&cfg, metrics, log, pub)
	require.NoError(t, err)
	prices, err := pricing.New(cfg.Pricing.Models)
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics,
		Features: features, Prices: prices, Events: pub})
	require.NoError(t, err)
	ln := kit.Listen(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	s.URL = "http://" + ln.Addr().String()
	// The order cmd/shepherd stops in: server, features, publisher (flushes
	// what is queued), store.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		_ = features.Close()
		_ = pub.Close(ctx)
		_ = st.Close()
	})
	return s
}
