// Package context_test drives the opt-in context features (prose,
// compaction, gating, format, budgets) end to end: the real proxy, in
// process, against the scripted mock provider, through the kit's wire
// drivers. Each feature's tests live in a file of their own; this file is
// the rig they share.
package context_test

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
	"github.com/shepherd-proxy/shepherd/test/kit/inproc"
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
	inproc.OnMock(&cfg, m)
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	rec := &events.Recorder{}
	url := inproc.Start(t, &cfg, inproc.Options{Store: o.Store, Events: rec})
	return &rig{Mock: m, Events: rec, URL: url}
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
