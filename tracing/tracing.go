// Package tracing builds the OpenTelemetry tracer provider the proxy traces
// with (config section tracing, docs/tracing.md): spans batched and
// exported over OTLP, gRPC or HTTP, sampled by ratio where a trace starts
// at shepherd and as the agent decided where it sent a traceparent.
//
// The proxy takes the provider as proxy.Options.Tracing; nil (tracing off)
// makes it call no tracer at all. The caller shuts the provider down after
// the server: Shutdown exports the spans still batched.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
)

// Default collector addresses when tracing.endpoint is empty.
const (
	DefaultGRPCEndpoint = "localhost:4317"
	DefaultHTTPEndpoint = "localhost:4318"
)

// exportTimeout bounds one export (the batch processor's and the
// exporter's own retries included).
const exportTimeout = 10 * time.Second

// New builds the tracer provider of cfg (validated; Enabled is not
// checked: the caller asks only when it is on). It dials nothing: the
// exporter connects on its first export, so a collector that is down
// delays no start-up. With log set, export errors are logged on it (warn;
// it becomes OpenTelemetry's global error handler, so the last New's log
// wins), never with the headers, which may hold credentials. version is
// shepherd's version (service.version; "" leaves it out).
func New(cfg config.Tracing, version string, log *zap.Logger) (*sdktrace.TracerProvider, error) {
	exp, err := newExporter(cfg)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.ServiceName)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	if log != nil {
		l := log.Named("tracing")
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			l.Warn("trace export failed", zap.Error(err))
		}))
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithExportTimeout(exportTimeout)),
		sdktrace.WithSampler(Sampler(cfg.SampleRatio)),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	), nil
}

// Sampler is shepherd's sampler: a request whose agent sent a traceparent
// follows its sampled flag; a trace that starts at shepherd is recorded
// with probability ratio (by trace id, so every replica decides alike).
func Sampler(ratio float64) sdktrace.Sampler {
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
}

// target is where and how the exporter sends: the collector's host:port,
// whether without TLS, and the URL path over HTTP ("" keeps /v1/traces).
type target struct {
	host     string
	insecure bool
	path     string
}

// targetOf resolves tracing.endpoint: empty is the protocol's standard
// local port; host:port takes tracing.insecure; a URL's scheme decides TLS
// (http: none) and its path, if any, is the HTTP path.
func targetOf(cfg config.Tracing) (target, error) {
	e := cfg.Endpoint
	switch {
	case e == "" && cfg.Protocol == config.TracingGRPC:
		return target{host: DefaultGRPCEndpoint, insecure: cfg.Insecure}, nil
	case e == "":
		return target{host: DefaultHTTPEndpoint, insecure: cfg.Insecure}, nil
	case !strings.Contains(e, "://"):
		return target{host: e, insecure: cfg.Insecure}, nil
	}
	u, err := url.Parse(e)
	if err != nil {
		return target{}, fmt.Errorf("tracing: endpoint: %w", err)
	}
	t := target{host: u.Host, insecure: u.Scheme == "http"}
	if u.Path != "" && u.Path != "/" {
		t.path = u.Path
	}
	return t, nil
}

func newExporter(cfg config.Tracing) (sdktrace.SpanExporter, error) {
	t, err := targetOf(cfg)
	if err != nil {
		return nil, err
	}
	headers := cfg.HeaderPairs()
	ctx := context.Background()
	switch cfg.Protocol {
	case config.TracingGRPC:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(t.host), otlptracegrpc.WithTimeout(exportTimeout)}
		if t.insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if headers != nil {
			opts = append(opts, otlptracegrpc.WithHeaders(headers))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: otlp grpc exporter: %w", err)
		}
		return exp, nil
	case config.TracingHTTP:
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(t.host), otlptracehttp.WithTimeout(exportTimeout)}
		if t.insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if t.path != "" {
			opts = append(opts, otlptracehttp.WithURLPath(t.path))
		}
		if headers != nil {
			opts = append(opts, otlptracehttp.WithHeaders(headers))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("tracing: otlp http exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("tracing: protocol %q is not grpc or http", cfg.Protocol)
}
