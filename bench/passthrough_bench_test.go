package bench_test

// Benchmarks of shepherd's pass-through path: the real proxy.Server on a
// loopback TCP listener in front of the in-process mock provider, against
// the same client talking to the mock directly.
//
// Everything runs in this process, so ns/op is the round-trip time of one
// request with one connection (serial, no concurrency), and B/op and
// allocs/op count the client, the mock and (for Proxy*) shepherd together.
// The client and the mock do the same work in DirectX and ProxyX, so
// ProxyX - DirectX is what shepherd adds: its own CPU time, allocations and
// the second loopback hop.
//
// The client side uses a real loopback socket, not a
// fasthttputil.InmemoryListener: shepherd's upstream client dials TCP (its
// dialer is not injectable), so the shepherd-to-mock hop is loopback TCP
// anyway, and putting the client on TCP too keeps Direct and Proxy
// symmetrical (Direct = one TCP hop, Proxy = two) instead of comparing an
// in-memory pipe with a socket.

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// env is a mock provider and a shepherd in front of it.
type env struct {
	mockAddr  string
	proxyAddr string
}

// startEnv starts the mock (no recording, the workload reply shape, no
// delays) and shepherd with every upstream pointing at it; both stop when b
// ends.
func startEnv(b *testing.B) *env { return startEnvWith(b, false) }

// startEnvWith is startEnv with, when hooks is set, the default features on:
// topics, intents (a policy in a temporary workspace, an intent selected
// by current_intent_id) and recovery, memory store.
func startEnvWith(b *testing.B, hooks bool) *env {
	return startEnvShape(b, hooks, workload.MockDefault)
}

// startEnvShape is startEnvWith with the mock serving shape (its text, chunk
// size and tool calls; the load script's mockprovider flags for that shape).
func startEnvShape(b *testing.B, hooks bool, shape workload.MockShape) *env {
	b.Helper()
	var def mock.Reply
	if shape.Tools > 0 {
		def.ToolCalls = mock.NumberedToolCalls(shape.Tools)
	}
	m := mock.New(mock.Options{
		NoRecord:  true,
		Default:   def,
		PadText:   shape.Pad,
		ChunkSize: shape.Chunk,
	})
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)

	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Admin.Listen = "127.0.0.1:0" // separate admin listener (not served): the production handler
	cfg.Upstreams.Anthropic = m.URL()
	cfg.Upstreams.OpenAI = m.URL()
	cfg.Upstreams.Gemini = m.URL()
	cfg.Log.Level = "warn"
	// The pass-through path has every feature off; hooks turns on the defaults.
	cfg.Topics.Enabled = hooks
	cfg.Recovery.Enabled = hooks
	cfg.Edits.Enabled = hooks
	cfg.Intents.Enabled = config.SwitchOff
	var features *proxy.Features
	metrics := proxy.NewMetrics()
	if hooks {
		dir := b.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, ".orchestration"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".orchestration", "active_intents.yaml"), []byte(benchPolicy), 0o644); err != nil {
			b.Fatal(err)
		}
		cfg.Intents.Enabled = config.SwitchOn
		cfg.Intents.WorkspaceRoot = dir
	}
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	if hooks {
		var err error
		if features, err = proxy.BuildFeatures(&cfg, metrics, zap.NewNop()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = features.Close() })
	}
	st := state.NewMemory(state.MemoryOptions{MaxSessions: cfg.State.MaxSessions, TTL: cfg.State.TTL})
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: zap.NewNop(), Store: st, Metrics: metrics, Features: features})
	if err != nil {
		b.Fatal(err)
	}
	url := kit.Serve(b, srv, func() { _ = st.Close() })
	return &env{mockAddr: strings.TrimPrefix(m.URL(), "http://"), proxyAddr: strings.TrimPrefix(url, "http://")}
}

// newClient is the load side: one fasthttp.HostClient per benchmark, so
// connection reuse is the same for every target.
func newClient(addr string, stream bool) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                     addr,
		MaxConns:                 4,
		StreamResponseBody:       stream,
		NoDefaultUserAgentHeader: true,
		ReadBufferSize:           16 << 10,
		WriteBufferSize:          16 << 10,
		MaxResponseBodySize:      64 << 20,
	}
}

// newRequest builds the request for a workload once; fasthttp's client does
// not consume it, so every iteration sends the same object.
func newRequest(addr string, w workload.Body) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI("http://" + addr + w.Path)
	req.Header.SetContentType("application/json")
	for _, h := range w.Headers {
		req.Header.Set(h[0], h[1])
	}
	req.SetBodyRaw(w.JSON)
	return req
}

// jsonCases are the non-streaming workloads the in-process mock (the
// default reply shape) serves: small, agent50k (Anthropic) and chat50k
// (OpenAI Chat Completions).
var jsonCases = func() []workload.Body {
	var out []workload.Body
	for _, b := range workload.All() {
		if !b.Stream && b.Mock == workload.MockDefault {
			out = append(out, b)
		}
	}
	return out
}()

// BenchmarkDirectJSON: client → mock, non-streaming.
func BenchmarkDirectJSON(b *testing.B) {
	e := startEnv(b)
	for _, c := range jsonCases {
		b.Run(c.Name, func(b *testing.B) { benchJSON(b, e.mockAddr, c) })
	}
}

// BenchmarkProxyJSON: client → shepherd → mock, non-streaming.
func BenchmarkProxyJSON(b *testing.B) {
	e := startEnv(b)
	for _, c := range jsonCases {
		b.Run(c.Name, func(b *testing.B) { benchJSON(b, e.proxyAddr, c) })
	}
}

// benchPolicy is the intents policy of the hooks-on benchmarks.
const benchPolicy = `version: 1
current_intent_id: INT-001
intents:
  - id: INT-001
    summary: "Benchmark intent"
    scope:
      allow_glob: ["src/**"]
    constraints:
      disallow_patterns: ["rm\\s+-rf"]
`

// BenchmarkProxyJSONHooks: client → shepherd with topics, intents and
// recovery on → mock, non-streaming.
func BenchmarkProxyJSONHooks(b *testing.B) {
	e := startEnvWith(b, true)
	for _, c := range jsonCases {
		b.Run(c.Name, func(b *testing.B) { benchJSON(b, e.proxyAddr, c) })
	}
}

// sseCases are the streamed workloads: stream (100 events, the default
// shape) and agent50k-stream (the 50 KB agent request, 300 events ending
// with a tool call, the agent-stream shape).
var sseCases = func() []workload.Body {
	var out []workload.Body
	for _, b := range workload.All() {
		if b.Stream {
			out = append(out, b)
		}
	}
	return out
}()

// runSSE runs benchSSE for every streamed workload, each against its own
// mock shape; addr picks the target of an env (mock or proxy).
func runSSE(b *testing.B, hooks bool, addr func(*env) string) {
	for _, c := range sseCases {
		b.Run(c.Name, func(b *testing.B) { benchSSE(b, addr(startEnvShape(b, hooks, c.Mock)), c) })
	}
}

// BenchmarkProxySSEHooks: the streams through shepherd with the features on.
func BenchmarkProxySSEHooks(b *testing.B) {
	runSSE(b, true, func(e *env) string { return e.proxyAddr })
}

// BenchmarkDirectSSE: client → mock, each stream read to its end.
func BenchmarkDirectSSE(b *testing.B) {
	runSSE(b, false, func(e *env) string { return e.mockAddr })
}

// BenchmarkProxySSE: client → shepherd → mock, the same streams.
func BenchmarkProxySSE(b *testing.B) {
	runSSE(b, false, func(e *env) string { return e.proxyAddr })
}

// wantJSON marks a well-formed reply of each API.
var wantJSON = map[string][]byte{
	workload.APIAnthropic: []byte(`"type":"message"`),
	workload.APIChat:      []byte(`"object":"chat.completion"`),
}

func benchJSON(b *testing.B, addr string, w workload.Body) {
	c := newClient(addr, false)
	defer c.CloseIdleConnections()
	req := newRequest(addr, w)
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)

	// One checked request outside the timed loop (and to open the connection).
	if err := c.Do(req, resp); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode() != 200 || !bytes.Contains(resp.Body(), wantJSON[w.API]) {
		b.Fatalf("status %d body %.200q", resp.StatusCode(), resp.Body())
	}
	respBytes := len(resp.Body())

	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 || len(resp.Body()) != respBytes {
			b.Fatalf("status %d, %d body bytes, want %d", resp.StatusCode(), len(resp.Body()), respBytes)
		}
	}
	b.ReportMetric(float64(len(w.JSON)), "req-B")
	b.ReportMetric(float64(respBytes), "resp-B")
}

func benchSSE(b *testing.B, addr string, stream workload.Body) {
	c := newClient(addr, true)
	defer c.CloseIdleConnections()
	want := stream.Events()
	req := newRequest(addr, stream)
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	buf := make([]byte, 32<<10)

	// 64 sessions in turn, as the load script's wrk sends them: with hooks
	// on, a session's state grows with every reply that carries a tool call
	// (the agent stream's does), so a single session would make the cost of
	// a request grow with b.N.
	var sessions [64]string
	for i := range sessions {
		sessions[i] = "bench-" + strconv.Itoa(i)
	}
	n := 0

	// readStream sends one request and reads the stream to its end,
	// counting events (blank-line terminated, across read boundaries).
	readStream := func() int {
		n++
		req.Header.Set("X-Session-Id", sessions[n%len(sessions)])
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d", resp.StatusCode())
		}
		events := 0
		var prev byte
		if bs := resp.BodyStream(); bs != nil {
			for {
				n, err := bs.Read(buf)
				events += countEvents(buf[:n], prev)
				if n > 0 {
					prev = buf[n-1]
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		} else {
			events = countEvents(resp.Body(), 0)
		}
		if err := resp.CloseBodyStream(); err != nil {
			b.Fatal(err)
		}
		return events
	}

	if n := readStream(); n != want {
		b.Fatalf("stream had %d events, want %d", n, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := readStream(); n != want {
			b.Fatalf("stream had %d events, want %d", n, want)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*want), "ns/event")
	b.ReportMetric(float64(want), "events/op")
}

// countEvents counts "\n\n" in p, including one that straddles the previous
// read (prev is the last byte before p).
func countEvents(p []byte, prev byte) int {
	if len(p) == 0 {
		return 0
	}
	n := bytes.Count(p, []byte("\n\n"))
	if prev == '\n' && p[0] == '\n' {
		n++
	}
	return n
}
