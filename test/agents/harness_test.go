package agents

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

// stack is a mock provider behind a real shepherd server, both on loopback
// ports, stopped when the test ends.
type stack struct {
	mock *mock.Server
	// URL is shepherd's base URL, without a path.
	URL string
	// Workdir is the agent's working directory and the intents workspace.
	Workdir string

	mu      sync.Mutex
	respond responder
}

// responder answers one model request of the agent; main is true when the
// request declares the agent's own tools (a turn of the agent loop, rather
// than a side request such as a title or a quota check).
type responder func(req mock.Recorded, main bool) mock.Reply

// stackOptions tune a stack.
type stackOptions struct {
	Topics bool
	// Policy, when set, is written to .orchestration/active_intents.yaml in
	// the workdir and turns intent governance on.
	Policy   string
	Recovery bool
	// Feed wires the live event feed as cmd/shepherd does: a
	// feed.Publisher over the store's event log, given to the features and
	// the proxy, closed after them and before the store.
	Feed bool
	// Configure, when set, adjusts the configuration before it is
	// validated.
	Configure func(*config.Config)
}

func newStack(t *testing.T, d driver, o stackOptions) *stack {
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
	cfg.Topics.Enabled = o.Topics
	cfg.Recovery.Enabled = o.Recovery
	cfg.Intents.Enabled = config.SwitchOff
	if o.Policy != "" {
		dir := filepath.Join(s.Workdir, ".orchestration")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "active_intents.yaml"), []byte(o.Policy), 0o644))
		cfg.Intents.Enabled = config.SwitchOn
		cfg.Intents.WorkspaceRoot = s.Workdir
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	require.NoError(t, cfg.Validate())

	st := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour,
		EventsPerSession: cfg.Events.PerSession, EventsGlobal: cfg.Events.Global})
	metrics := proxy.NewMetrics()
	log := zap.NewNop()
	if os.Getenv("SHEPHERD_AGENTS_LOG") != "" {
		log, _ = zap.NewDevelopment()
	}
	var pub *feed.Publisher
	if o.Feed {
		var err error
		pub, err = feed.New(feed.Options{Log: st, Queue: cfg.Events.Queue, Metrics: metrics.Registry, Logger: log})
		require.NoError(t, err)
	}
	var emitter events.Emitter // nil interface, not a nil *feed.Publisher
	if pub != nil {
		emitter = pub
	}
	// The store's edit journal, as cmd/shepherd gives it to the features.
	journal, _ := any(st).(state.EditJournal)
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, log, proxy.FeatureDeps{Events: emitter, Journal: journal})
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics,
		Features: features, Events: emitter})
	require.NoError(t, err)
	// The order cmd/shepherd stops in: server, features, publisher (flushes
	// what is queued), store.
	s.URL = kit.Serve(t, srv, func() { _ = features.Close() }, func() {
		if pub != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = pub.Close(ctx)
		}
	}, func() { _ = st.Close() })
	return s
}

// script sets the responder for the agent's model requests.
func (s *stack) script(r responder) {
	s.mu.Lock()
	s.respond = r
	s.mu.Unlock()
}

// mainRequests returns the model requests that were turns of the agent loop.
func (s *stack) mainRequests(d driver) []mock.Recorded {
	var out []mock.Recorded
	for _, r := range s.mock.Requests() {
		if r.API != "" && isMainTurn(d, r) {
			out = append(out, r)
		}
	}
	return out
}

// isMainTurn reports whether req declares the driver's file-writing tool:
// the agent's own loop sends its tools on every turn, its side requests
// (titles, summaries, checks) do not.
func isMainTurn(d driver, req mock.Recorded) bool {
	w := wire(d)
	if req.API != w.MockAPI() {
		return false
	}
	return slices.Contains(w.DeclaredTools(req.Body), d.writeTool())
}

// metric sums the samples of shepherd's metric name whose labels include
// every one of labels (e.g. `result="recovered"`), 0 when absent.
func (s *stack) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	return kit.Metrics(t, s.URL+"/metrics").Sum(name, labels...)
}
