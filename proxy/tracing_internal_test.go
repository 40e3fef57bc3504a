package proxy

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
)

// testTrace is a requestTrace under a server span, exporting to memory.
func testTrace(t *testing.T) (*requestTrace, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := newTracer(tp)
	rt := &requestTrace{tr: tr, op: "chat", provider: "anthropic", model: "m", nextKind: roundRequest}
	rt.ctx, rt.server = tr.t.Start(context.Background(), "chat m")
	return rt, exp
}

// TestHookPhaseFailures: each hook that failed is an exception event
// naming it, listed in shepherd.hooks.failed; the phase's status is an
// error. A phase whose hooks all ran is OK.
func TestHookPhaseFailures(t *testing.T) {
	rt, exp := testTrace(t)
	rt.HookPhaseStarted(turn.PhaseRequest)
	rt.HookPhaseEnded(turn.PhaseRequest, nil)
	rt.HookPhaseStarted(turn.PhaseReply)
	rt.HookPhaseEnded(turn.PhaseReply, errors.Join(
		&hooks.HookError{Hook: "topics", Err: errors.New("store down")},
		&hooks.HookError{Hook: "intents", Err: errors.New("bad rule")},
	))
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	ok, failed := spans[0], spans[1]
	require.Equal(t, "shepherd.hooks.request", ok.Name)
	require.Equal(t, codes.Unset, ok.Status.Code)
	require.Empty(t, ok.Events)

	require.Equal(t, "shepherd.hooks.reply", failed.Name)
	require.Equal(t, codes.Error, failed.Status.Code)
	require.Equal(t, rt.server.SpanContext().SpanID(), failed.Parent.SpanID())
	var names []string
	for _, kv := range failed.Attributes {
		if kv.Key == attrHooksFailed {
			names = kv.Value.AsStringSlice()
		}
	}
	require.Equal(t, []string{"topics", "intents"}, names)
	require.Len(t, failed.Events, 2)
	require.Equal(t, "exception", failed.Events[0].Name)
}

// TestTraceOffIsUntypedNil: with tracing off the turn gets a nil
// turn.Trace, not an interface holding a nil pointer (whose methods the
// engine would call).
func TestTraceOffIsUntypedNil(t *testing.T) {
	x := &exchange{}
	require.Nil(t, x.turnTrace())
	require.True(t, x.turnTrace() == nil)
	require.Nil(t, newTracer(nil), "no provider: no tracer")
	if !raceEnabled { // allocation counts are not meaningful under -race
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = x.turnTrace() }))
	}
}

// TestRoundKinds: rounds are numbered in order and named by what the
// engine said it sends; a round left open ends when the next starts or
// the request ends.
func TestRoundKinds(t *testing.T) {
	rt, exp := testTrace(t)
	up := &upstream{provider: ProviderAnthropic, client: &fasthttp.HostClient{Addr: "127.0.0.1:1"}}
	for _, cont := range []bool{false, true} {
		req := &fasthttp.Request{}
		rt.roundStarted(req, up, "")
		require.NotEmpty(t, req.Header.Peek("traceparent"))
		rt.RoundSending(cont)
	}
	rt.endRound(nil)
	var kinds []string
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == attrRoundKind {
				kinds = append(kinds, kv.Value.AsString())
			}
		}
	}
	require.Equal(t, []string{"request", "followup"}, kinds)
}
