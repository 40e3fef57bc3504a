package proxy_test

// OpenTelemetry traces end to end (docs/tracing.md), with the spans caught
// by an in-memory exporter: a continued turn with a topics follow-up shows
// the server span, one client span per upstream round, the hook phases,
// the GenAI attributes and the session; each upstream request carries the
// traceparent of its round's span, in the agent's trace.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
	"github.com/shepherd-proxy/shepherd/tracing"
)

// The agent's trace context in the tests: its trace id is the whole
// trace's, its span id the server span's parent.
const (
	agentTraceID   = "4bf92f3577b34da6a3ce929d0e0e4736"
	agentSpanID    = "00f067aa0ba902b7"
	agentParent    = "00-" + agentTraceID + "-" + agentSpanID + "-01"
	agentUnsampled = "00-" + agentTraceID + "-" + agentSpanID + "-00"
)

// memTracing is a tracer provider exporting synchronously to memory.
func memTracing(sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sampler)), exp
}

// traceAgent is recCase.agent with extra request headers (a traceparent).
func traceAgent(t *testing.T, h *harness, c recCase, session string, extra map[string]string) recAgent {
	t.Helper()
	headers := map[string]string{"X-Session-Id": session}
	for k, v := range extra {
		headers[k] = v
	}
	model := c.api.defaultModel()
	if c.mode == "raw" {
		a := kit.NewAgent(c.api.api.d, h.URL, headers)
		a.Request.Model, a.Request.Limit = model, 2000
		return &rawRecAgent{api: c.api, a: a}
	}
	s := c.api.sa.session(t, h.URL, headers, &http.Client{})
	rs, ok := s.(recSDKSession)
	require.True(t, ok, "no recovery SDK agent for %T", s)
	rs.setModelLimit(model, 2000)
	return &sdkRecAgent{s: rs, stream: c.mode == "stream", ctx: e2eCtx(t), model: model}
}

// traced is the spans of one request, by role.
type traced struct {
	server tracetest.SpanStub
	rounds []tracetest.SpanStub // client spans, in start order
	phases map[string][]tracetest.SpanStub
	// hooks are the spans of single hooks, by the phase span they ran in.
	hooks   map[trace.SpanID][]tracetest.SpanStub
	all     tracetest.SpanStubs
	traceID trace.TraceID
}

// waitTraced waits for the server span (a stream's ends after the agent
// read the reply) and sorts the spans of its trace.
func waitTraced(t *testing.T, exp *tracetest.InMemoryExporter) traced {
	t.Helper()
	var tr traced
	require.Eventually(t, func() bool {
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindServer {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "no server span")
	tr.all = exp.GetSpans()
	tr.phases = map[string][]tracetest.SpanStub{}
	tr.hooks = map[trace.SpanID][]tracetest.SpanStub{}
	servers := 0
	for _, s := range tr.all {
		if s.SpanKind == trace.SpanKindServer {
			tr.server = s
			servers++
		}
	}
	require.Equal(t, 1, servers, "one server span per model request")
	tr.traceID = tr.server.SpanContext.TraceID()
	for _, s := range tr.all {
		require.Equal(t, tr.traceID, s.SpanContext.TraceID(), "span %s is in the request's trace", s.Name)
		switch {
		case s.SpanKind == trace.SpanKindClient:
			tr.rounds = append(tr.rounds, s)
		case strings.HasPrefix(s.Name, "shepherd.hooks."):
			tr.phases[strings.TrimPrefix(s.Name, "shepherd.hooks.")] = append(tr.phases[strings.TrimPrefix(s.Name, "shepherd.hooks.")], s)
		case strings.HasPrefix(s.Name, "shepherd.hook."):
			tr.hooks[s.Parent.SpanID()] = append(tr.hooks[s.Parent.SpanID()], s)
			continue // a child of its phase's span
		}
		if s.SpanKind != trace.SpanKindServer {
			require.Equal(t, tr.server.SpanContext.SpanID(), s.Parent.SpanID(), "span %s is the server span's child", s.Name)
		}
	}
	for i := 1; i < len(tr.rounds); i++ {
		require.False(t, tr.rounds[i].StartTime.Before(tr.rounds[i-1].EndTime), "rounds follow each other")
	}
	return tr
}

// attr is the value of key on s (an invalid Value when unset).
func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// genAIProviderOf is the gen_ai.provider.name a kit API is traced with.
func genAIProviderOf(api string) string {
	switch api {
	case "anthropic":
		return "anthropic"
	case "gemini":
		return "gcp.gemini"
	}
	return "openai"
}

// requireTraceparent asserts an upstream request carried the traceparent of
// round's span.
func requireTraceparent(t *testing.T, r mock.Recorded, round tracetest.SpanStub) {
	t.Helper()
	tp := r.Header.Get("Traceparent")
	parts := strings.Split(tp, "-")
	require.Len(t, parts, 4, "traceparent %q", tp)
	require.Equal(t, round.SpanContext.TraceID().String(), parts[1], "trace id")
	require.Equal(t, round.SpanContext.SpanID().String(), parts[2], "parent id: the round's client span")
	require.Equal(t, "01", parts[3], "sampled")
}

// tracedContinuedTurn runs the continued turn of TestRecoveryWithTopics
// (a topic opened alone and followed up, the follow-up's reply cut and
// continued) with the agent's traceparent, and returns its spans and the
// upstream requests.
func tracedContinuedTurn(t *testing.T, c recCase, tp trace.TracerProvider, exp *tracetest.InMemoryExporter) (traced, []mock.Recorded, string) {
	h := newHarness(t, harnessOptions{Tracing: tp, Config: func(cfg *config.Config) {
		cfg.Recovery.Enabled = true
		cfg.Topics.Enabled = true
	}})
	session := recSession(t, c)
	a := traceAgent(t, h, c, session, map[string]string{"traceparent": agentParent, "tracestate": "vendor=v1"})
	h.mock.Script(
		mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Pangram"}`}},
			Usage: mock.Usage{Input: 100, Output: 10, CacheRead: 40, CacheWrite: 7}},
		mock.Reply{ID: "r2", Text: recPartial, Stop: "max_tokens", Usage: mock.Usage{Input: 120, Output: 20, CacheRead: 50}},
		mock.Reply{ID: "r3", Text: recRest, Usage: mock.Usage{Input: 150, Output: 5, CacheRead: 60}},
	)
	a.user("Write the pangram.")
	requireFinished(t, c, a.send(t), recPangram)
	reqs := requireUpstream(t, h, c, 3)
	return waitTraced(t, exp), reqs, session
}

// TestTracingContinuedTurn: the trace of a continued, hook-edited turn
// shows each round, on every API, streamed and not.
func TestTracingContinuedTurn(t *testing.T) {
	runRecovery(t, func(t *testing.T, c recCase) {
		tp, exp := memTracing(sdktrace.AlwaysSample())
		tr, reqs, session := tracedContinuedTurn(t, c, tp, exp)
		api := c.api.api.name

		// The server span: the agent's trace, the GenAI conventions, the
		// session, the turn's outcome summed over its rounds.
		s := tr.server
		require.Equal(t, agentTraceID, tr.traceID.String(), "the agent's trace continues")
		require.Equal(t, agentSpanID, s.Parent.SpanID().String(), "the agent's span is the parent")
		require.True(t, s.Parent.IsRemote())
		require.Equal(t, "vendor=v1", s.SpanContext.TraceState().String(), "tracestate is kept")
		model := c.api.defaultModel()
		op := "chat"
		if api == "gemini" {
			op = "generate_content"
		}
		require.Equal(t, op+" "+model, s.Name)
		require.Equal(t, op, attr(s, "gen_ai.operation.name").AsString())
		require.Equal(t, genAIProviderOf(api), attr(s, "gen_ai.provider.name").AsString())
		require.Equal(t, genAIProviderOf(api), attr(s, "gen_ai.system").AsString())
		require.Equal(t, model, attr(s, "gen_ai.request.model").AsString())
		require.Equal(t, session, attr(s, "gen_ai.conversation.id").AsString())
		require.Equal(t, c.route(), attr(s, "shepherd.route").AsString())
		require.EqualValues(t, 200, attr(s, "http.response.status_code").AsInt64())
		require.EqualValues(t, 3, attr(s, "shepherd.rounds").AsInt64())
		require.EqualValues(t, 1, attr(s, "shepherd.continuations").AsInt64())
		require.Equal(t, "end", attr(s, "shepherd.stop").AsString())
		for _, key := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
			"shepherd.usage.cache_read_tokens", "shepherd.usage.cache_write_tokens"} {
			var sum int64
			for _, r := range tr.rounds {
				sum += attr(r, key).AsInt64()
			}
			require.Equal(t, sum, attr(s, key).AsInt64(), "%s: the turn's is the sum of its rounds'", key)
		}
		if api == "anthropic" { // the mock's usage as scripted
			require.EqualValues(t, 370, attr(s, "gen_ai.usage.input_tokens").AsInt64(), "input tokens of the three rounds")
			require.EqualValues(t, 35, attr(s, "gen_ai.usage.output_tokens").AsInt64(), "output tokens of the three rounds")
			require.EqualValues(t, 150, attr(s, "shepherd.usage.cache_read_tokens").AsInt64())
			require.EqualValues(t, 7, attr(s, "shepherd.usage.cache_write_tokens").AsInt64())
			require.EqualValues(t, 150, attr(s, "gen_ai.usage.cache_read.input_tokens").AsInt64())
		}
		require.Positive(t, attr(s, "gen_ai.usage.output_tokens").AsInt64())
		require.NotEmpty(t, attr(s, "gen_ai.response.model").AsString())

		// One client span per round, in order: the agent's request, the
		// topics follow-up, the continuation; each upstream request
		// carried its span's traceparent.
		require.Len(t, tr.rounds, 3, "one client span per upstream round")
		for i, kind := range []string{"request", "followup", "continuation"} {
			r := tr.rounds[i]
			require.Equal(t, kind, attr(r, "shepherd.round.kind").AsString(), "round %d", i)
			require.EqualValues(t, i, attr(r, "shepherd.round").AsInt64())
			require.Equal(t, model, attr(r, "gen_ai.request.model").AsString())
			require.Equal(t, genAIProviderOf(api), attr(r, "gen_ai.provider.name").AsString())
			require.EqualValues(t, 200, attr(r, "http.response.status_code").AsInt64())
			require.NotEmpty(t, attr(r, "server.address").AsString())
			requireTraceparent(t, reqs[i], r)
		}
		require.EqualValues(t, 10, attr(tr.rounds[0], "gen_ai.usage.output_tokens").AsInt64())
		require.EqualValues(t, 20, attr(tr.rounds[1], "gen_ai.usage.output_tokens").AsInt64())
		require.EqualValues(t, 5, attr(tr.rounds[2], "gen_ai.usage.output_tokens").AsInt64())
		require.Equal(t, "max_tokens", attr(tr.rounds[1], "shepherd.stop").AsString())
		require.Equal(t, "end", attr(tr.rounds[2], "shepherd.stop").AsString())
		require.Len(t, attr(tr.rounds[1], "gen_ai.response.finish_reasons").AsStringSlice(), 1)
		require.Empty(t, reqs[0].Header.Values("Tracestate")[1:], "one tracestate header")

		// The hook phases: the request hooks once, the reply hooks per
		// reply, the outcome once.
		require.Len(t, tr.phases["request"], 1)
		require.Len(t, tr.phases["reply"], 3, "reply hooks per round")
		require.Len(t, tr.phases["outcome"], 1)
		for i, p := range tr.phases["reply"] {
			require.EqualValues(t, i, attr(p, "shepherd.round").AsInt64(), "reply hooks of round %d", i)
			require.False(t, p.StartTime.Before(tr.rounds[i].EndTime), "reply hooks run after their round's reply")
		}
		// Each phase's span holds a span per hook that ran in it, in the
		// chain's order: request hooks in chain order, reply hooks in
		// reverse (recovery sees a reply first).
		hookNames := func(phase tracetest.SpanStub) []string {
			var names []string
			for _, h := range tr.hooks[phase.SpanContext.SpanID()] {
				names = append(names, strings.TrimPrefix(h.Name, "shepherd.hook."))
				require.Equal(t, names[len(names)-1], attr(h, "shepherd.hook").AsString())
			}
			return names
		}
		require.Equal(t, []string{"topics", "recovery"}, hookNames(tr.phases["request"][0]))
		for i, p := range tr.phases["reply"] {
			want := []string{"recovery", "topics"}
			if i == 1 { // the cut reply: recovery continues it, no later hook sees it
				want = want[:1]
			}
			require.Equal(t, want, hookNames(p), "reply hooks of round %d", i)
		}
		require.True(t, tr.phases["request"][0].EndTime.Before(tr.rounds[0].StartTime) ||
			tr.phases["request"][0].EndTime.Equal(tr.rounds[0].StartTime), "request hooks run before the first round")

		// No credential of the agent's in any attribute.
		for _, sp := range tr.all {
			for _, kv := range sp.Attributes {
				for _, secret := range []string{"sk-ant-test", "sk-test", "g-test"} {
					require.NotContains(t, kv.Value.Emit(), secret, "span %s attribute %s", sp.Name, kv.Key)
				}
			}
		}
	}, recCases("raw", "stream"))
}

// TestTracingStartsTraceWithoutParent: without the agent's traceparent the
// trace starts at shepherd (a root server span) and the provider still gets
// the round's traceparent.
func TestTracingStartsTraceWithoutParent(t *testing.T) {
	tp, exp := memTracing(sdktrace.AlwaysSample())
	h := newHarness(t, harnessOptions{Tracing: tp})
	h.mock.Script(mock.Reply{Text: "Hi."})
	resp, body := do(t, "POST", h.URL+"/v1/messages", `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode, string(body))
	tr := waitTraced(t, exp)
	require.False(t, tr.server.Parent.IsValid(), "a root span")
	require.Len(t, tr.rounds, 1, "the pass-through request is one round")
	require.Empty(t, tr.phases, "no hook ran")
	requireTraceparent(t, h.mock.Requests()[0], tr.rounds[0])
	require.Equal(t, "claude-test", attr(tr.server, "gen_ai.request.model").AsString())
}

// TestTracingSampling: a trace that starts at shepherd is recorded by
// ratio (0: never), an agent's sampled traceparent is followed even then;
// either way the provider gets a traceparent of the agent's trace with the
// decision.
func TestTracingSampling(t *testing.T) {
	for _, tc := range []struct {
		name, parent string
		recorded     bool
		flags        string
	}{
		{"no parent, ratio 0", "", false, "00"},
		{"sampled parent", agentParent, true, "01"},
		{"unsampled parent", agentUnsampled, false, "00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, exp := memTracing(tracing.Sampler(0))
			h := newHarness(t, harnessOptions{Tracing: tp})
			h.mock.Script(mock.Reply{Text: "Hi."})
			hs := anthropicHeaders()
			if tc.parent != "" {
				hs["traceparent"] = tc.parent
			}
			resp, body := do(t, "POST", h.URL+"/v1/messages", `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`, hs)
			require.Equal(t, 200, resp.StatusCode, string(body))
			if tc.recorded {
				waitTraced(t, exp)
			} else {
				time.Sleep(50 * time.Millisecond)
				require.Empty(t, exp.GetSpans())
			}
			got := strings.Split(h.mock.Requests()[0].Header.Get("Traceparent"), "-")
			require.Len(t, got, 4)
			require.Equal(t, tc.flags, got[3])
			if tc.parent != "" {
				require.Equal(t, agentTraceID, got[1], "the agent's trace goes on upstream")
				require.NotEqual(t, agentSpanID, got[2], "under shepherd's round span")
			}
		})
	}
}

// TestTracingOffIsTransparent: with tracing off the agent's trace context
// reaches the provider exactly as sent.
func TestTracingOffIsTransparent(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.mock.Script(mock.Reply{Text: "Hi."})
	hs := anthropicHeaders()
	hs["traceparent"], hs["tracestate"] = agentParent, "vendor=v1"
	resp, body := do(t, "POST", h.URL+"/v1/messages", `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`, hs)
	require.Equal(t, 200, resp.StatusCode, string(body))
	got := h.mock.Requests()[0].Header
	require.Equal(t, agentParent, got.Get("Traceparent"))
	require.Equal(t, "vendor=v1", got.Get("Tracestate"))
}

// TestTracingOpeningSession: a request that opens a conversation (no
// session id) is traced with the session its state was saved under, the
// one the agent is told and its next request carries.
func TestTracingOpeningSession(t *testing.T) {
	tp, exp := memTracing(sdktrace.AlwaysSample())
	h := newHarness(t, harnessOptions{Tracing: tp, Config: func(cfg *config.Config) { cfg.Topics.Enabled = true }})
	h.mock.Script(mock.Reply{Text: "Hi."})
	resp, body := do(t, "POST", h.URL+"/v1/messages", `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode, string(body))
	saved := resp.Header.Get("X-Shepherd-Session")
	require.NotEmpty(t, saved)
	tr := waitTraced(t, exp)
	require.Equal(t, saved, attr(tr.server, "gen_ai.conversation.id").AsString())
	require.Len(t, tr.phases["request"], 1)
}

// TestTracingMalformedParent: a traceparent that does not parse starts a
// new trace, and the agent's tracestate, which belonged to it, does not go
// upstream beside shepherd's traceparent.
func TestTracingMalformedParent(t *testing.T) {
	tp, exp := memTracing(sdktrace.AlwaysSample())
	h := newHarness(t, harnessOptions{Tracing: tp})
	h.mock.Script(mock.Reply{Text: "Hi."})
	hs := anthropicHeaders()
	hs["traceparent"], hs["tracestate"] = "00-not-a-trace-01", "vendor=v1"
	resp, body := do(t, "POST", h.URL+"/v1/messages", `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`, hs)
	require.Equal(t, 200, resp.StatusCode, string(body))
	tr := waitTraced(t, exp)
	require.False(t, tr.server.Parent.IsValid(), "a new trace")
	got := h.mock.Requests()[0].Header
	requireTraceparent(t, h.mock.Requests()[0], tr.rounds[0])
	require.Empty(t, got.Values("Tracestate"))
}
