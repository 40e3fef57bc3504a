package proxy_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discardExporter drops every span: the benchmarks measure the proxy's
// tracing, batched as in production, not an exporter's network.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

func tracedProvider(b *testing.B) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// BenchmarkTurnJSONTraced and BenchmarkTurnStreamTraced are
// BenchmarkTurnJSON and BenchmarkTurnStream with every request traced
// (docs/tracing.md has the numbers, off and on).
func BenchmarkTurnJSONTraced(b *testing.B)   { benchTurnTraced(b, false, tracedProvider(b)) }
func BenchmarkTurnStreamTraced(b *testing.B) { benchTurnTraced(b, true, tracedProvider(b)) }
