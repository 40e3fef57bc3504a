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
	"github.com/shepherd-proxy/shepherd/test/kit"
	"github.com/shepherd-proxy/shepherd/test/kit/inproc"
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
	inproc.OnMock(&cfg, m)
	cfg.Recovery.Enabled = false
	if configure != nil {
		configure(&cfg)
	}
	rec := &events.Recorder{}
	core, logs := observer.New(zapcore.DebugLevel)
	url := inproc.Start(t, &cfg, inproc.Options{Events: rec, Logger: zap.New(core)})
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
