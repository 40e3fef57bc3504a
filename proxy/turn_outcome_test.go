package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
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
	"github.com/shepherd-proxy/shepherd/state"
)

// outcomePolicy refuses calls named "rm" and asks once to continue a reply
// cut by the output limit; outcomes records what the engine reports.
type outcomePolicy struct{}

func (outcomePolicy) Name() string { return "policy" }

// MayContinue implements hooks.Continuer: the chain runs truncation recovery.
func (outcomePolicy) MayContinue() bool { return true }
func (outcomePolicy) OnReply(_ context.Context, call *hooks.Call, r *conv.Reply) (hooks.ReplyDecision, error) {
	var d hooks.ReplyDecision
	if r.Stop == conv.StopMaxTokens && call.Recoveries < 1 {
		d.Continue = &conv.Continuation{Instruction: "Continue."}
		return d, nil
	}
	for _, c := range r.ToolCalls {
		if c.Name == "rm" {
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Refuse, Result: "refused"})
		}
	}
	return d, nil
}

type outcomes struct {
	mu  sync.Mutex
	got []conv.TurnOutcome
}

func (*outcomes) Name() string { return "outcomes" }
func (o *outcomes) OnOutcome(_ context.Context, _ *hooks.Call, out *conv.TurnOutcome) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, *out)
	return nil
}

func (o *outcomes) wait(t *testing.T, n int) []conv.TurnOutcome {
	t.Helper()
	require.Eventually(t, func() bool { o.mu.Lock(); defer o.mu.Unlock(); return len(o.got) >= n }, 5*time.Second, 10*time.Millisecond)
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]conv.TurnOutcome(nil), o.got...)
}

// TestTurnOutcomeJSONAndStream runs the outcome phase through the proxy's
// real writers: a refused call next to a delivered one, and a reply cut by
// the output limit and continued, each as JSON and as a stream.
func TestTurnOutcomeJSONAndStream(t *testing.T) {
	m := mock.New(mock.Options{})
	require.NoError(t, m.Start())
	t.Cleanup(m.Close)
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	rec := &outcomes{}
	f := &Features{
		chains: map[*rewrite.Descriptor]*hooks.Chain{anthropic.Descriptor: hooks.NewChain(outcomePolicy{}, rec)},
	}
	srv, err := New(Options{Config: &cfg, Logger: zaptest.NewLogger(t), Store: state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour}), Features: f})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	url := "http://" + ln.Addr().String() + "/v1/messages"

	send := func(stream bool) string {
		body := `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"tools":[{"name":"rm","input_schema":{"type":"object"}},{"name":"ls","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "outcome")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, string(b))
		return string(b)
	}
	for i, stream := range []bool{false, true} {
		m.Script(mock.Reply{Text: "doing", ToolCalls: []mock.ToolCall{{ID: "toolu_rm", Name: "rm", Args: "{}"}, {ID: "toolu_ls", Name: "ls", Args: "{}"}}, Usage: mock.Usage{Input: 7, Output: 3}})
		out := send(stream)
		require.NotContains(t, out, "toolu_rm")
		require.Contains(t, out, "toolu_ls")
		got := rec.wait(t, 2*i+1)[2*i]
		require.Len(t, got.Calls, 2)
		require.Equal(t, conv.FateRefused, got.Calls[0].Fate, "stream=%v", stream)
		require.Equal(t, "refused", got.Calls[0].Result)
		require.Equal(t, conv.FateDelivered, got.Calls[1].Fate)
		require.Equal(t, 1, got.Rounds)
		require.Equal(t, conv.StopToolUse, got.Stop)
		require.Equal(t, conv.Usage{InputTokens: 7, OutputTokens: 3}, got.Usage)
		require.NoError(t, got.Err)

		m.Script(mock.Reply{Text: "The first half", Stop: "max_tokens", Usage: mock.Usage{Input: 7, Output: 100}},
			mock.Reply{Text: " and the rest.", Usage: mock.Usage{Input: 9, Output: 4}})
		out = send(stream)
		require.Contains(t, out, "the rest.")
		got = rec.wait(t, 2*i+2)[2*i+1]
		require.Equal(t, 2, got.Rounds, "stream=%v", stream)
		require.Equal(t, 1, got.Continuations)
		require.Equal(t, conv.StopEnd, got.Stop)
		require.Equal(t, conv.Usage{InputTokens: 16, OutputTokens: 104}, got.Usage)
		require.Empty(t, got.Calls)
	}
}
