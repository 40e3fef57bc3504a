package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
)

// benchTurn measures whole turns through shepherd with topics on (the
// request hooks, the ledger, the reply loop and the save), JSON or
// streamed, against the mock over loopback.
func benchTurn(b *testing.B, stream bool) { benchTurnTraced(b, stream, nil) }

// benchTurnTraced is benchTurn with the proxy's tracer provider tp (nil:
// tracing off, the default).
func benchTurnTraced(b *testing.B, stream bool, tp trace.TracerProvider) {
	m := mock.New(mock.Options{Default: mock.Reply{Text: strings.Repeat("word ", 200)}})
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	cfg.Intents.Enabled = config.SwitchOff
	metrics := proxy.NewMetrics()
	features, err := proxy.BuildFeatures(&cfg, metrics, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	defer features.Close()
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: zap.NewNop(), Store: store, Metrics: metrics, Features: features, Tracing: tp})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown(context.Background()) }()
	url := "http://" + ln.Addr().String() + "/v1/messages"
	streamField := "false"
	if stream {
		streamField = "true"
	}
	body := `{"model":"claude-sonnet-4-5","max_tokens":1000,"stream":` + streamField +
		`,"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"go on"}]}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkTurnJSON(b *testing.B)   { benchTurn(b, false) }
func BenchmarkTurnStream(b *testing.B) { benchTurn(b, true) }
