package tracing

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/shepherd-proxy/shepherd/config"
)

func TestTargetOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol string
		endpoint string
		insecure bool
		want     target
	}{
		{"grpc default", config.TracingGRPC, "", false, target{host: DefaultGRPCEndpoint}},
		{"http default", config.TracingHTTP, "", true, target{host: DefaultHTTPEndpoint, insecure: true}},
		{"host:port takes insecure", config.TracingGRPC, "otel:4317", true, target{host: "otel:4317", insecure: true}},
		{"host:port TLS", config.TracingHTTP, "otel:4318", false, target{host: "otel:4318"}},
		{"http URL has no TLS", config.TracingHTTP, "http://otel:4318", false, target{host: "otel:4318", insecure: true}},
		{"https URL", config.TracingHTTP, "https://otel.example.com", false, target{host: "otel.example.com"}},
		{"URL path replaces /v1/traces", config.TracingHTTP, "https://gw.example.com/otlp/v1/traces", false, target{host: "gw.example.com", path: "/otlp/v1/traces"}},
		{"root path keeps the default", config.TracingHTTP, "http://otel:4318/", false, target{host: "otel:4318", insecure: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := targetOf(config.Tracing{Protocol: tc.protocol, Endpoint: tc.endpoint, Insecure: tc.insecure})
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// grpcCollector is an OTLP/gRPC trace service keeping what it receives.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
	auth  []string
}

func (c *grpcCollector) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auth = append(c.auth, md.Get("authorization")...)
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				c.names = append(c.names, sp.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestGRPCExport: protocol grpc sends the spans, with the configured
// headers as metadata, to an OTLP/gRPC collector; Shutdown flushes them.
func TestGRPCExport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	col := &grpcCollector{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, col)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	cfg := config.Defaults().Tracing
	cfg.Enabled, cfg.Protocol, cfg.Endpoint, cfg.Insecure = true, config.TracingGRPC, ln.Addr().String(), true
	cfg.Headers = []string{"authorization=Bearer grpc-secret"}
	tp, err := New(cfg, "", nil)
	require.NoError(t, err)
	_, sp := tp.Tracer("test").Start(context.Background(), "chat m", trace.WithSpanKind(trace.SpanKindServer))
	sp.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tp.Shutdown(ctx))

	col.mu.Lock()
	defer col.mu.Unlock()
	require.Equal(t, []string{"chat m"}, col.names)
	require.Equal(t, []string{"Bearer grpc-secret"}, col.auth)
}

// TestSamplerRatio: ratio 0 records no trace that starts here, 1 every
// one.
func TestSamplerRatio(t *testing.T) {
	for _, ratio := range []float64{0, 1} {
		tp, err := New(config.Tracing{Protocol: config.TracingHTTP, Endpoint: "127.0.0.1:1", Insecure: true, SampleRatio: ratio, ServiceName: "s"}, "", nil)
		require.NoError(t, err)
		_, sp := tp.Tracer("test").Start(context.Background(), "x")
		require.Equal(t, ratio == 1, sp.IsRecording(), "ratio %v", ratio)
		sp.End()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = tp.Shutdown(ctx) // the endpoint is closed: the export fails, nothing waits on it
		cancel()
	}
}

// FuzzTargetOf: every endpoint the configuration accepts resolves to a
// collector host, and none makes the resolution panic.
func FuzzTargetOf(f *testing.F) {
	for _, s := range []string{"", "otel:4317", "http://otel:4318", "https://gw/otlp/v1/traces", "http://[::1]:4318/", ":1", "ftp://x"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, endpoint string, grpcProto bool) {
		c := config.Defaults()
		c.Tracing.Endpoint = endpoint
		if grpcProto {
			c.Tracing.Protocol = config.TracingGRPC
		}
		got, err := targetOf(c.Tracing)
		if c.Validate() != nil {
			return
		}
		if err != nil || got.host == "" {
			t.Fatalf("valid endpoint %q resolved to %+v, %v", endpoint, got, err)
		}
	})
}
