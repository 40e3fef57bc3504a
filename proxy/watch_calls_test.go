package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/responses"
	"github.com/shepherd-proxy/shepherd/state"
)

// callWatcher is a hooks.CallWatcher that records every delta it is given
// (copied), while on.
type callWatcher struct {
	on     atomic.Bool
	mu     sync.Mutex
	deltas []conv.ToolCallDelta
}

func (*callWatcher) Name() string { return "watcher" }

func (w *callWatcher) WatchCalls(*hooks.Call) conv.CallObserver {
	if !w.on.Load() {
		return nil
	}
	return func(d conv.ToolCallDelta) {
		d.ID, d.Name, d.Fragment = strings.Clone(d.ID), strings.Clone(d.Name), strings.Clone(d.Fragment)
		w.mu.Lock()
		w.deltas = append(w.deltas, d)
		w.mu.Unlock()
	}
}

// take returns the deltas recorded so far and forgets them.
func (w *callWatcher) take() []conv.ToolCallDelta {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.deltas
	w.deltas = nil
	return d
}

// TestWatchCallsThroughProxy: through a real server and the mock provider,
// a watcher in the chain gets the calls of streamed replies in pieces and
// of JSON replies whole, on Anthropic and Responses (a free-form call
// included), and the bytes the agent gets are the same with the watcher on
// and off.
func TestWatchCallsThroughProxy(t *testing.T) {
	m := mock.New(mock.Options{ChunkSize: 16})
	require.NoError(t, m.Start())
	t.Cleanup(m.Close)
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	w := &callWatcher{}
	f := &Features{chains: map[*rewrite.Descriptor]*hooks.Chain{
		anthropic.Descriptor: hooks.NewChain(w),
		responses.Descriptor: hooks.NewChain(w),
	}}
	srv, err := New(Options{Config: &cfg, Logger: zaptest.NewLogger(t), Store: state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour}), Features: f})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	base := "http://" + ln.Addr().String()

	content := strings.Repeat("the plan goes on, line after line. ", 8) + "END OF FILE"
	write := `{"path":"/work/notes/plan.md","content":"` + content + `"}`
	patch := "*** Begin Patch\n*** Update File: a.go\n@@\n-old\n+new\n*** End Patch"
	session := 0
	send := func(path, body string) string {
		session++
		req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-test")
		req.Header.Set("x-api-key", "sk-test")
		req.Header.Set("X-Session-Id", "watch-"+strings.Repeat("x", session))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, string(b))
		return string(b)
	}
	type call struct {
		name, id, args string
		freeform       bool
	}
	cases := []struct {
		name, path, body string
		stream           bool
		calls            []mock.ToolCall
		want             []call
	}{
		{name: "anthropic", path: "/v1/messages", body: `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"write it"}]%s}`,
			calls: []mock.ToolCall{{ID: "toolu_W", Name: "Write", Args: write}},
			want:  []call{{name: "Write", id: "toolu_W", args: write}}},
		{name: "responses", path: "/v1/responses", body: `{"model":"gpt-5-codex","input":"write it"%s}`,
			calls: []mock.ToolCall{{ID: "call_W", Name: "write_file", Args: write}, {ID: "call_P", Name: "apply_patch", Args: patch, Custom: true}},
			want:  []call{{name: "write_file", id: "call_W", args: write}, {name: "apply_patch", id: "call_P", args: patch, freeform: true}}},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			extra := ""
			if stream {
				extra = `,"stream":true`
			}
			body := strings.Replace(c.body, "%s", extra, 1)
			reply := mock.Reply{ID: "r_" + c.name, Text: "Writing.", ToolCalls: c.calls}
			run := func(on bool) (string, []conv.ToolCallDelta) {
				w.on.Store(on)
				m.Script(reply)
				out := send(c.path, body)
				return out, w.take()
			}
			plain, none := run(false)
			require.Empty(t, none)
			watched, deltas := run(true)
			require.Equal(t, plain, watched, "%s stream=%v: the agent's bytes changed with a watcher", c.name, stream)

			byIndex := map[int][]conv.ToolCallDelta{}
			for _, d := range deltas {
				require.Equal(t, 0, d.Stream)
				byIndex[d.Index] = append(byIndex[d.Index], d)
			}
			require.Len(t, byIndex, len(c.want), "%s stream=%v: %+v", c.name, stream, deltas)
			for i, want := range c.want {
				ds := byIndex[i]
				require.NotEmpty(t, ds)
				require.Equal(t, want.id, ds[0].ID)
				require.Equal(t, want.name, ds[0].Name)
				var args strings.Builder
				for j, d := range ds {
					require.Equal(t, j == len(ds)-1, d.Done, "Done once, last")
					require.Equal(t, want.freeform, d.Freeform)
					args.WriteString(d.Fragment)
				}
				require.Equal(t, want.args, args.String(), "%s stream=%v call %d", c.name, stream, i)
				if stream {
					require.Greater(t, len(ds), 3, "%s: a streamed call comes in pieces", c.name)
				} else {
					require.Len(t, ds, 1, "%s: a JSON reply's call is one delta", c.name)
				}
			}
		}
	}
}
