// Package inproc starts shepherd in process for end-to-end tests, wired as
// the binary wires it. It is apart from package kit because it imports the
// proxy: kit stays importable by the tests of the packages the proxy is
// built from (state's tests use it).
package inproc

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// OnMock points every upstream of cfg at the mock provider m and serves
// the admin endpoints on the main listener, on a free loopback port: the
// configuration every in-process test of shepherd starts from.
func OnMock(cfg *config.Config, m *mock.Server) {
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
}

// Options are what Start wires beside the configuration.
// Every field is optional.
type Options struct {
	// Store is the state store (nil: a memory store the kit makes and
	// closes). A store given here is the caller's to close: pass its
	// Close in Closers to close it after the server.
	Store state.Store
	// Events is the live feed (nil: none).
	Events events.Emitter
	// Logger is the proxy's logger (nil: the test's).
	Logger *zap.Logger
	// Metrics are the proxy's metrics (nil: fresh ones); give them when
	// something else registers on the same registry (a feed publisher).
	Metrics *proxy.Metrics
	// Closers run after the server and its features stopped, in order
	// (the feed's publisher, then the store).
	Closers []func()
}

// Start starts a shepherd server in process as the binary wires
// it: the features built from cfg (validated first) with the store's edit
// journal and counters and the live feed. It returns the server's base
// URL and stops everything when the test ends.
func Start(t testing.TB, cfg *config.Config, o Options) string {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("inproc: configuration: %v", err)
	}
	closers := o.Closers
	st := o.Store
	if st == nil {
		mem := state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
		st = mem
		closers = append(closers, func() { _ = mem.Close() })
	}
	log := o.Logger
	if log == nil {
		log = zaptest.NewLogger(t)
	}
	journal, _ := st.(state.EditJournal)
	counters, _ := st.(state.Counters)
	metrics := o.Metrics
	if metrics == nil {
		metrics = proxy.NewMetrics()
	}
	features, err := proxy.BuildFeaturesWith(cfg, metrics, log, proxy.FeatureDeps{Events: o.Events, Journal: journal, Counters: counters})
	if err != nil {
		t.Fatalf("inproc: features: %v", err)
	}
	srv, err := proxy.New(proxy.Options{Config: cfg, Logger: log, Store: st, Metrics: metrics, Features: features, Events: o.Events})
	if err != nil {
		_ = features.Close()
		t.Fatalf("inproc: server: %v", err)
	}
	return kit.Serve(t, srv, append([]func(){func() { _ = features.Close() }}, closers...)...)
}
