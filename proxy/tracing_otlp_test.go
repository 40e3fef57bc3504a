package proxy_test

// The exporter configuration end to end: tracing.New with protocol http
// sends a continued turn's spans to an OTLP/HTTP endpoint the test serves
// (the protobuf ExportTraceServiceRequest decoded as a collector would),
// with the configured headers; the spans arrive once the provider is shut
// down (shepherd's shutdown flush).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/tracing"
)

// otlpCollector is an OTLP/HTTP traces endpoint: it decodes every export
// and keeps its spans and request headers.
type otlpCollector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
	headers  []http.Header
	paths    []string
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.headers = append(c.headers, r.Header.Clone())
	c.paths = append(c.paths, r.URL.Path)
	for _, rs := range req.GetResourceSpans() {
		c.resource = rs.GetResource().GetAttributes()
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// otlpAttr is the string form of key on a protobuf span's attributes.
func otlpAttr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

func TestTracingOTLPHTTPExport(t *testing.T) {
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	tcfg := config.Defaults().Tracing
	tcfg.Enabled = true
	tcfg.Protocol = config.TracingHTTP
	tcfg.Endpoint = srv.URL // http://127.0.0.1:port: no TLS, the default /v1/traces
	tcfg.ServiceName = "shepherd-e2e"
	tcfg.Headers = []string{"authorization=Bearer collector-secret"}
	tp, err := tracing.New(tcfg, "test", nil) // nil: no global error handler outliving the test
	require.NoError(t, err)

	h := newHarness(t, harnessOptions{Tracing: tp, Config: func(cfg *config.Config) {
		cfg.Recovery.Enabled = true
		cfg.Topics.Enabled = true
	}})
	// Not streamed: the server span ends before the agent has the reply
	// (a stream's ends after its last byte), so the flush below has it.
	c := recCase{api: recAPINamed(t, "anthropic"), mode: "raw"}
	session := "otlp-session"
	a := traceAgent(t, h, c, session, map[string]string{"traceparent": agentParent})
	h.mock.Script(
		mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Pangram"}`}}},
		mock.Reply{ID: "r2", Text: recPartial, Stop: "max_tokens"},
		mock.Reply{ID: "r3", Text: recRest},
	)
	a.user("Write the pangram.")
	requireFinished(t, c, a.send(t), recPangram)
	reqs := requireUpstream(t, h, c, 3)

	// Shutdown flushes the batch: the spans are at the collector after it.
	require.NoError(t, tp.Shutdown(context.Background()))

	col.mu.Lock()
	defer col.mu.Unlock()
	require.NotEmpty(t, col.headers, "no export arrived")
	for i, hd := range col.headers {
		require.Equal(t, "Bearer collector-secret", hd.Get("Authorization"), "export %d carries the configured header", i)
		require.Equal(t, "/v1/traces", col.paths[i])
	}
	require.Equal(t, "shepherd-e2e", otlpAttr(col.resource, "service.name").GetStringValue())

	var server *tracepb.Span
	var rounds []*tracepb.Span
	phases := map[string]int{}
	for _, sp := range col.spans {
		require.Equal(t, agentTraceID, hex.EncodeToString(sp.GetTraceId()), "span %s in the agent's trace", sp.GetName())
		switch {
		case sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER:
			require.Nil(t, server, "one server span")
			server = sp
		case sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT:
			rounds = append(rounds, sp)
		case strings.HasPrefix(sp.GetName(), "shepherd.hooks."):
			phases[strings.TrimPrefix(sp.GetName(), "shepherd.hooks.")]++
		}
	}
	require.NotNil(t, server)
	require.Equal(t, agentSpanID, hex.EncodeToString(server.GetParentSpanId()))
	attrs := server.GetAttributes()
	require.Equal(t, session, otlpAttr(attrs, "gen_ai.conversation.id").GetStringValue())
	require.Equal(t, "anthropic", otlpAttr(attrs, "gen_ai.provider.name").GetStringValue())
	require.Equal(t, "anthropic", otlpAttr(attrs, "gen_ai.system").GetStringValue())
	require.Equal(t, "chat", otlpAttr(attrs, "gen_ai.operation.name").GetStringValue())
	require.Equal(t, c.api.defaultModel(), otlpAttr(attrs, "gen_ai.request.model").GetStringValue())
	require.NotNil(t, otlpAttr(attrs, "gen_ai.usage.input_tokens"))
	require.NotNil(t, otlpAttr(attrs, "gen_ai.usage.output_tokens"))
	require.EqualValues(t, 3, otlpAttr(attrs, "shepherd.rounds").GetIntValue())
	require.EqualValues(t, 1, otlpAttr(attrs, "shepherd.continuations").GetIntValue())

	require.Len(t, rounds, 3, "one client span per round")
	kinds := map[string]bool{}
	for _, r := range rounds {
		require.True(t, bytes.Equal(server.GetSpanId(), r.GetParentSpanId()), "round %s under the server span", r.GetName())
		kinds[otlpAttr(r.GetAttributes(), "shepherd.round.kind").GetStringValue()] = true
		// The upstream request of this round carried its span id.
		i := otlpAttr(r.GetAttributes(), "shepherd.round").GetIntValue()
		parts := strings.Split(reqs[i].Header.Get("Traceparent"), "-")
		require.Len(t, parts, 4)
		require.Equal(t, agentTraceID, parts[1], "upstream request %d: the trace id", i)
		require.Equal(t, hex.EncodeToString(r.GetSpanId()), parts[2], "upstream request %d: its round's span", i)
	}
	require.Equal(t, map[string]bool{"request": true, "followup": true, "continuation": true}, kinds)
	require.Equal(t, map[string]int{"request": 1, "reply": 3, "outcome": 1}, phases)
	for _, sp := range col.spans {
		for _, kv := range sp.GetAttributes() {
			require.NotContains(t, kv.GetValue().String(), "sk-ant-test", "no credential in span %s", sp.GetName())
		}
	}
}
