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
	require.NoError(t, cfg.Validate())

	st := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})
	metrics := proxy.NewMetrics()
	log := zap.NewNop()
	if os.Getenv("SHEPHERD_AGENTS_LOG") != "" {
		log, _ = zap.NewDevelopment()
	}
	features, err := proxy.BuildFeatures(&cfg, metrics, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = features.Close() })
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics, Features: features})
	require.NoError(t, err)
	ln := kit.Listen(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	s.URL = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		_ = st.Close()
	})
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
