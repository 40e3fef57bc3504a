package eval

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
)

// shepherd is one proxy started in process, as the binary starts it (the
// features built with the store's journal and counters), in front of one
// upstream base URL for every API.
type shepherd struct {
	URL    string
	Events *events.Recorder

	srv      *proxy.Server
	features *proxy.Features
	store    *state.Memory
	served   chan struct{}
}

// evalConfig is the configuration of the eval's proxy: the defaults, every
// upstream on upstream, topics on, intents on with the workspace's policy,
// recovery on. run_tests is always allowed (it writes nothing); the
// output-limit floor is off so a prompt's small limit provokes a cut.
func evalConfig(upstream string, ws *Workspace) config.Config {
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = upstream, upstream, upstream
	cfg.Listen = "127.0.0.1:0"
	cfg.Admin.Listen = ""
	cfg.Topics.Enabled = true
	cfg.Intents.Enabled = config.SwitchOn
	cfg.Intents.WorkspaceRoot = ws.Root
	cfg.Intents.File = filepath.Join(ws.Root, filepath.FromSlash(PolicyPath))
	cfg.Intents.AlwaysAllowed = append(cfg.Intents.AlwaysAllowed, ToolTests)
	cfg.Recovery.Enabled = true
	cfg.Recovery.MinOutputTokens = 0
	return cfg
}

// startShepherd validates cfg and serves it on loopback.
func startShepherd(cfg config.Config, log *zap.Logger) (*shepherd, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("eval: config: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	mem := state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	journal, _ := any(mem).(state.EditJournal)
	counters, _ := any(mem).(state.Counters)
	rec := &events.Recorder{}
	metrics := proxy.NewMetrics()
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, log, proxy.FeatureDeps{Events: rec, Journal: journal, Counters: counters})
	if err != nil {
		_ = mem.Close()
		return nil, fmt.Errorf("eval: features: %w", err)
	}
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: mem, Metrics: metrics, Features: features, Events: rec})
	if err != nil {
		_ = features.Close()
		_ = mem.Close()
		return nil, fmt.Errorf("eval: proxy: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		_ = features.Close()
		_ = mem.Close()
		return nil, fmt.Errorf("eval: listen: %w", err)
	}
	s := &shepherd{URL: "http://" + ln.Addr().String(), Events: rec, srv: srv, features: features, store: mem,
		served: make(chan struct{})}
	go func() {
		defer close(s.served)
		_ = srv.Serve(ln)
	}()
	return s, nil
}

// Close shuts the proxy down, then what it used.
func (s *shepherd) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.served
	_ = s.features.Close()
	_ = s.store.Close()
}
