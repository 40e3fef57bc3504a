// Package diag_test drives the per-turn diagnostics end to end (cache
// integrity, shepherd's overhead on every reply; docs/diagnostics.md): the
// real proxy, in process, against the scripted mock provider, through the
// kit's wire drivers.
package diag_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// rig is one real shepherd server on loopback with its mock provider, its
// live feed recorded and its logs observed.
type rig struct {
	Mock   *mock.Server
	Events *events.Recorder
	Logs   *observer.ObservedLogs
	URL    string
}

// newRig starts shepherd with its default features (the turn engine runs
// on every model request) on a memory store; configure may change the
// configuration.
func newRig(t *testing.T, configure func(*config.Config)) *rig {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Recovery.Enabled = false
	if configure != nil {
		configure(&cfg)
	}
	require.NoError(t, cfg.Validate())
	mem := state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	rec := &events.Recorder{}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	metrics := proxy.NewMetrics()
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, log, proxy.FeatureDeps{Events: rec})
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: mem, Metrics: metrics, Features: features, Events: rec})
	require.NoError(t, err)
	url := kit.Serve(t, srv, func() { _ = features.Close() }, func() { _ = mem.Close() })
	return &rig{Mock: m, Events: rec, Logs: logs, URL: url}
}

// finished waits for the n-th request.finished (a stream's is emitted when
// its writer ends, just after the client read the last byte) and returns
// them all.
func (r *rig) finished(t *testing.T, n int) []events.Event {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.Events.Of(events.RequestFinished)) >= n }, 5*time.Second, 5*time.Millisecond)
	return r.Events.Of(events.RequestFinished)
}

// session reads one session from the sessions API.
func (r *rig) session(t *testing.T, id string) map[string]any {
	t.Helper()
	resp, body := kit.Do(t, "GET", r.URL+"/shepherd/v1/sessions/"+id, "", nil)
	require.Equal(t, 200, resp.StatusCode, string(body))
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out))
	return out
}

// upstreamBodies are the bodies the mock received, oldest first.
func (r *rig) upstreamBodies() [][]byte {
	var out [][]byte
	for _, req := range r.Mock.Requests() {
		out = append(out, req.Body)
	}
	return out
}
