package proxy_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// harness is a real shepherd server on a loopback port in front of a
// scripted mock provider that serves all four APIs.
type harness struct {
	t       *testing.T
	mock    *mock.Server
	srv     *proxy.Server
	cfg     *config.Config
	store   state.Store
	metrics *proxy.Metrics
	// URL is shepherd's base URL (admin endpoints are on the same listener).
	URL string
}

// harnessOptions tune a harness.
type harnessOptions struct {
	Mock   mock.Options
	Config func(*config.Config)
	Store  state.Store
	// Logger replaces the test logger (e.g. one writing to a buffer).
	Logger *zap.Logger
	// Tracing is the proxy's tracer provider (nil: tracing off).
	Tracing trace.TracerProvider
}

// newHarness starts a mock and shepherd; both stop when the test ends.
func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	m := kit.StartMock(t, o.Mock)

	cfg := config.Defaults()
	cfg.Upstreams.Anthropic = m.URL()
	cfg.Upstreams.OpenAI = m.URL()
	cfg.Upstreams.Gemini = m.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	// Tests of the transparent core run with every feature off; feature
	// tests turn theirs on.
	cfg.Topics.Enabled = false
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	cfg.Edits.Enabled = false
	if o.Config != nil {
		o.Config(&cfg)
	}
	require.NoError(t, cfg.Validate())

	st := o.Store
	if st == nil {
		st = state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	}
	metrics := proxy.NewMetrics()
	log := o.Logger
	if log == nil {
		log = zaptest.NewLogger(t)
	}
	features, err := proxy.BuildFeatures(&cfg, metrics, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = features.Close() })
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics, Features: features, Tracing: o.Tracing})
	require.NoError(t, err)
	url := kit.Serve(t, srv, func() { _ = st.Close() })
	return &harness{t: t, mock: m, srv: srv, cfg: &cfg, store: st, metrics: metrics, URL: url}
}

// rawClient is an HTTP client that shows bytes as they are on the wire: no
// transparent decompression, no connection reuse surprises between tests.
var rawClient = kit.Client

// do sends a request and returns the response with its body read.
func do(t *testing.T, method, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	return kit.Do(t, method, url, body, headers)
}

// apiCase is one model route with a minimal valid request body.
type apiCase struct {
	name string
	// api is the kit driver of the route's API.
	api        string
	path       string // path and query
	body       string
	stream     bool
	headers    map[string]string
	errorCheck func(t *testing.T, status int, body []byte)
}

// driverHeaders are the test credentials of the kit driver of api.
func driverHeaders(api string) map[string]string {
	d, ok := kit.Lookup(api)
	if !ok {
		panic("no kit driver " + api)
	}
	return d.Headers()
}

func anthropicHeaders() map[string]string { return driverHeaders("anthropic") }

func openaiHeaders() map[string]string { return driverHeaders("openai_chat") }

func geminiHeaders() map[string]string { return driverHeaders("gemini") }

// modelCases returns one non-streaming and one streaming case per API (and
// both Gemini stream framings).
func modelCases() []apiCase {
	anth := `{"model":"claude-test","max_tokens":256,"messages":[{"role":"user","content":"Hello"}]%s}`
	chat := `{"model":"gpt-test","messages":[{"role":"user","content":"Hello"}]%s}`
	resp := `{"model":"gpt-test","input":"Hello"%s}`
	gem := `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}]}`
	f := func(tmpl, extra string) string { return strings.Replace(tmpl, "%s", extra, 1) }
	return []apiCase{
		{name: "anthropic", api: "anthropic", path: "/v1/messages?beta=true", body: f(anth, ""), headers: anthropicHeaders()},
		{name: "anthropic_stream", api: "anthropic", path: "/v1/messages?beta=true", body: f(anth, `,"stream":true`), stream: true, headers: anthropicHeaders()},
		{name: "chat", api: "openai_chat", path: "/v1/chat/completions", body: f(chat, ""), headers: openaiHeaders()},
		{name: "chat_stream", api: "openai_chat", path: "/v1/chat/completions", body: f(chat, `,"stream":true,"stream_options":{"include_usage":true}`), stream: true, headers: openaiHeaders()},
		{name: "responses", api: "openai_responses", path: "/v1/responses", body: f(resp, ""), headers: openaiHeaders()},
		{name: "responses_stream", api: "openai_responses", path: "/v1/responses", body: f(resp, `,"stream":true`), stream: true, headers: openaiHeaders()},
		{name: "gemini", api: "gemini", path: "/v1beta/models/gemini-test:generateContent", body: gem, headers: geminiHeaders()},
		{name: "gemini_sse", api: "gemini", path: "/v1beta/models/gemini-test:streamGenerateContent?alt=sse", body: gem, stream: true, headers: geminiHeaders()},
		{name: "gemini_array", api: "gemini", path: "/v1beta/models/gemini-test:streamGenerateContent", body: gem, stream: true, headers: geminiHeaders()},
	}
}
