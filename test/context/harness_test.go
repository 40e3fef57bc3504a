// Package context_test drives the opt-in context features (prose,
// compaction, gating, format, budgets) end to end: the real proxy, in
// process, against the scripted mock provider, through the kit's wire
// drivers. Each feature's tests live in a file of their own; this file is
// the rig they share.
package context_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// rigOptions configure a rig.
type rigOptions struct {
	// Mock configures the mock provider.
	Mock mock.Options
	// Configure changes the configuration after the rig's defaults (all
	// upstreams on the mock, intents and recovery off, admin endpoints on
	// the main listener) and before it is validated.
	Configure func(*config.Config)
	// Store is the state store (nil: a fresh memory store). The rig closes
	// a store it made; a store given here is the caller's to close, after
	// the rig (register its Close with t.Cleanup before calling newRig).
	Store state.Store
	// Mock, when not nil, is a mock provider to use instead of starting
	// one (two rigs, one provider: replicas).
	Shared *mock.Server
}

// rig is one real shepherd server on loopback with its mock provider.
type rig struct {
	Mock   *mock.Server
	Store  state.Store
	Events *events.Recorder
	// URL is the proxy's base URL; its admin endpoints (metrics, the
	// sessions API) are under the same address.
	URL string
}

// newRig starts a shepherd server as the binary would start it (the
// features built with the store's journal and counters) and stops it when
// the test ends.
func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	m := o.Shared
	if m == nil {
		m = kit.StartMock(t, o.Mock)
	}
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	require.NoError(t, cfg.Validate())

	st := o.Store
	var closeStore func()
	if st == nil {
		mem := state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
		st, closeStore = mem, func() { _ = mem.Close() }
	}
	journal, _ := st.(state.EditJournal)
	counters, _ := st.(state.Counters)
	rec := &events.Recorder{}
	metrics := proxy.NewMetrics()
	log := zaptest.NewLogger(t)
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, log, proxy.FeatureDeps{Events: rec, Journal: journal, Counters: counters})
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics, Features: features, Events: rec})
	require.NoError(t, err)
	closers := []func(){func() { _ = features.Close() }}
	if closeStore != nil {
		closers = append(closers, closeStore)
	}
	url := kit.Serve(t, srv, closers...)
	return &rig{Mock: m, Store: st, Events: rec, URL: url}
}

// upstreamBodies are the bodies the mock received, oldest first.
func (r *rig) upstreamBodies() [][]byte {
	var out [][]byte
	for _, req := range r.Mock.Requests() {
		out = append(out, req.Body)
	}
	return out
}

// metrics reads the proxy's metrics.
func (r *rig) metrics(t *testing.T) *kit.MetricSet {
	t.Helper()
	return kit.Metrics(t, r.URL+"/metrics")
}
