package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/tracing"
)

// tracingFlushTimeout bounds the export of the spans still batched at
// shutdown.
const tracingFlushTimeout = 5 * time.Second

// newTracing builds the tracer provider when tracing.enabled (nil, an
// untyped nil, when off: the proxy then traces nothing) and the function
// that exports the spans still batched and stops it; call that after the
// server stopped.
func newTracing(cfg *config.Config, log *zap.Logger) (trace.TracerProvider, func(), error) {
	if !cfg.Tracing.Enabled {
		return nil, func() {}, nil
	}
	tp, err := tracing.New(cfg.Tracing, "", log)
	if err != nil {
		return nil, nil, err
	}
	log.Info("tracing on", zap.String("protocol", cfg.Tracing.Protocol), zap.String("endpoint", cfg.Tracing.Endpoint),
		zap.Float64("sample_ratio", cfg.Tracing.SampleRatio))
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("flushing traces failed", zap.Error(err))
		}
	}
	return tp, stop, nil
}
