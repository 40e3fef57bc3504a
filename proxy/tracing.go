package proxy

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Tracing (docs/tracing.md). With Options.Tracing set, each model request
// gets a server span (the GenAI conventions' attributes, the session as
// gen_ai.conversation.id), a client span per upstream round (the agent's
// request, each follow-up and continuation) whose W3C trace context the
// upstream request carries, and an internal span per hook phase. An
// incoming traceparent is the server span's parent.
//
// Off (Options.Tracing nil, the default) Server.tracer is nil and
// exchange.trace stays nil: each call site checks one of them first, so
// the request path makes no tracer call and allocates nothing for it.

// tracerName is the instrumentation scope of shepherd's spans.
const tracerName = "github.com/shepherd-proxy/shepherd/proxy"

// tracer is the server's tracer and propagator (nil: tracing off).
type tracer struct {
	t    trace.Tracer
	prop propagation.TraceContext
}

func newTracer(tp trace.TracerProvider) *tracer {
	if tp == nil {
		return nil
	}
	return &tracer{t: tp.Tracer(tracerName)}
}

// requestTrace is one model request's spans. The handler creates it; a
// stream's writer takes it over with the exchange (streamTurn), and the
// turn engine reports to it as the request's turn.Trace. It is used by
// one goroutine at a time.
type requestTrace struct {
	tr        *tracer
	ctx       context.Context // carries the server span
	server    trace.Span
	client    trace.Span // the open round's span (nil between rounds)
	phase     trace.Span // the open hook phase's span
	phaseCtx  context.Context
	hook      trace.Span // the running hook's span, a child of phase
	round     int        // rounds started
	nextKind  string     // kind of the next round (RoundSending)
	op        string     // gen_ai.operation.name
	provider  string     // gen_ai.provider.name of the route's upstream
	model     string     // the model the agent asked for
	respModel string     // the model of the latest reply that names one
	session   string     // an opening request's session, once saved
	ended     bool
}

var _ turn.Trace = (*requestTrace)(nil)

// traceRequest starts the server span of a model request (the handler
// calls it only when s.tracer is set), parented by the agent's
// traceparent when it sent one.
func (s *Server) traceRequest(ctx *fasthttp.RequestCtx, x *exchange, in *inspection) {
	if !x.route.inspect || x.route.api == nil {
		return
	}
	tr := s.tracer
	parent := tr.prop.Extract(context.Background(), requestCarrier{&ctx.Request.Header})
	rt := &requestTrace{
		tr: tr, op: genAIOperation(x.route.api.Name), provider: genAIProvider(x.route.provider),
		nextKind: roundRequest,
	}
	if in.view != nil && in.view.Model != "" {
		rt.model = in.view.Model
	} else {
		rt.model = x.route.api.RequestModel(ctx.URI().PathOriginal(), in.body)
	}
	rt.ctx, rt.server = tr.t.Start(parent, spanName(rt.op, rt.model),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(x.start))
	if rt.server.IsRecording() {
		rt.server.SetAttributes(
			semconv.GenAIOperationNameKey.String(rt.op),
			semconv.GenAIProviderNameKey.String(rt.provider),
			genAISystem.String(rt.provider),
			semconv.GenAIRequestModelKey.String(rt.model),
			attrRoute.String(x.route.name),
			attrRequestID.String(x.requestID),
		)
		if x.call.SessionID != "" {
			rt.server.SetAttributes(semconv.GenAIConversationIDKey.String(x.call.SessionID))
		}
		if x.call.Agent != "" {
			rt.server.SetAttributes(attrAgent.String(x.call.Agent))
		}
		if x.call.Side != "" {
			rt.server.SetAttributes(attrSide.String(x.call.Side))
		}
	}
	x.trace = rt
}

// roundStarted starts the client span of the next upstream round and puts
// its trace context on req (replacing the agent's traceparent, whose
// trace it continues). model is the model a routing rule sends req with
// ("": the agent's).
func (rt *requestTrace) roundStarted(req *fasthttp.Request, up *upstream, model string) {
	rt.endRound(nil)
	if model == "" {
		model = rt.model
	}
	kind := rt.nextKind
	ctx, sp := rt.tr.t.Start(rt.ctx, spanName(rt.op, model), trace.WithSpanKind(trace.SpanKindClient))
	rt.client = sp
	if sp.IsRecording() {
		sp.SetAttributes(
			semconv.GenAIOperationNameKey.String(rt.op),
			semconv.GenAIProviderNameKey.String(genAIProvider(up.provider)),
			genAISystem.String(genAIProvider(up.provider)),
			semconv.GenAIRequestModelKey.String(model),
			semconv.ServerAddressKey.String(up.client.Addr),
			attrRound.Int(rt.round),
			attrRoundKind.String(kind),
		)
	}
	rt.round++
	// The agent's tracestate belongs to its traceparent: the span context
	// carries it on when the agent's context was valid.
	req.Header.Del("Tracestate")
	rt.tr.prop.Inject(ctx, requestCarrier{&req.Header})
}

// roundResponded notes the upstream's answer to the open round: its
// status, or the error that left it without one (err as the client
// returned it; the span then ends).
func (rt *requestTrace) roundResponded(resp *fasthttp.Response, err error) {
	sp := rt.client
	if sp == nil {
		return
	}
	if err != nil {
		rt.endRound(classifyUpstreamError(err))
		return
	}
	status := resp.StatusCode()
	sp.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(status))
	if status >= 400 {
		sp.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		sp.SetStatus(codes.Error, "upstream status "+strconv.Itoa(status))
	}
}

// endRound ends the open round's span (err: it failed).
func (rt *requestTrace) endRound(err error) {
	sp := rt.client
	if sp == nil {
		return
	}
	rt.client = nil
	if err != nil {
		sp.RecordError(err)
		sp.SetAttributes(semconv.ErrorTypeKey.String(upstreamErrorKind(err)))
		sp.SetStatus(codes.Error, upstreamErrorKind(err))
	}
	sp.End()
}

// RoundReplied implements turn.Trace: the round's reply was read; its
// model, stop and usage go on the round's span, which ends.
func (rt *requestTrace) RoundReplied(reply *conv.Reply) {
	if reply.Model != "" {
		rt.respModel = reply.Model
	}
	sp := rt.client
	if sp == nil {
		return
	}
	if sp.IsRecording() {
		if reply.Model != "" {
			sp.SetAttributes(semconv.GenAIResponseModelKey.String(reply.Model))
		}
		sp.SetAttributes(usageAttrs(reply.Usage)...)
		sp.SetAttributes(attrStop.String(string(reply.Stop)))
		if reply.RawStop != "" {
			sp.SetAttributes(semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{reply.RawStop}))
		}
	}
	rt.endRound(nil)
}

// RoundSending implements turn.Trace: the next round is a continuation or
// a follow-up.
func (rt *requestTrace) RoundSending(cont bool) {
	rt.nextKind = roundFollowUp
	if cont {
		rt.nextKind = roundContinuation
	}
}

// OpeningSaved implements turn.Trace: the conversation an opening request
// began is known by the session it was saved under.
func (rt *requestTrace) OpeningSaved(session string) { rt.session = session }

// HookPhaseStarted implements turn.Trace.
func (rt *requestTrace) HookPhaseStarted(phase turn.HookPhase) {
	pctx, sp := rt.tr.t.Start(rt.ctx, "shepherd.hooks."+string(phase))
	if sp.IsRecording() {
		sp.SetAttributes(attrPhase.String(string(phase)))
		if phase == turn.PhaseReply {
			sp.SetAttributes(attrRound.Int(rt.round - 1))
		}
	}
	rt.phase, rt.phaseCtx = sp, pctx
}

// HookStarted implements hooks.HookObserver: a span per hook, a child of
// its phase's.
func (rt *requestTrace) HookStarted(name string) {
	if rt.phase == nil {
		return
	}
	_, sp := rt.tr.t.Start(rt.phaseCtx, "shepherd.hook."+name)
	if sp.IsRecording() {
		sp.SetAttributes(attrHook.String(name))
	}
	rt.hook = sp
}

// HookEnded implements hooks.HookObserver.
func (rt *requestTrace) HookEnded(name string, err error) {
	sp := rt.hook
	if sp == nil {
		return
	}
	rt.hook = nil
	if err != nil && sp.IsRecording() {
		sp.RecordError(err)
		sp.SetStatus(codes.Error, "hook failed")
	}
	sp.End()
}

// HookPhaseEnded implements turn.Trace: each hook that failed is an
// exception event naming it, and the span's status is an error.
func (rt *requestTrace) HookPhaseEnded(phase turn.HookPhase, err error) {
	sp := rt.phase
	if sp == nil {
		return
	}
	rt.phase, rt.phaseCtx = nil, nil
	if err != nil && sp.IsRecording() {
		var failed []string
		for _, e := range unjoinErr(err) {
			name := "unknown"
			var he *hooks.HookError
			if errors.As(e, &he) {
				name = he.Hook
			}
			failed = append(failed, name)
			sp.RecordError(e, trace.WithAttributes(attrHook.String(name)))
		}
		sp.SetAttributes(attrHooksFailed.StringSlice(failed))
		sp.SetStatus(codes.Error, "hook failed")
	}
	sp.End()
}

// traceShort marks the request a request hook answered itself.
func (rt *requestTrace) traceShort() {
	rt.server.SetAttributes(attrShort.Bool(true))
}

// traceFinished ends the request's spans, once: the server span gets the
// status, the session (an opening request's may be known only now) and,
// when a turn ran, its outcome: stop, rounds, continuations, usage summed
// over the rounds, cost.
func (s *Server) traceFinished(x *exchange, status int) {
	rt := x.trace
	if rt == nil || rt.ended {
		return
	}
	rt.ended = true
	rt.endRound(nil)
	if rt.phase != nil {
		rt.phase.End()
		rt.phase = nil
	}
	sp := rt.server
	if sp.IsRecording() {
		sp.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(status))
		if rt.session != "" {
			sp.SetAttributes(semconv.GenAIConversationIDKey.String(rt.session))
		} else if x.call.SessionID != "" {
			sp.SetAttributes(semconv.GenAIConversationIDKey.String(x.call.SessionID))
		}
		if rt.respModel != "" {
			sp.SetAttributes(semconv.GenAIResponseModelKey.String(rt.respModel))
		}
		rounds := rt.round
		if t := x.feed.turn; t != nil {
			o := t.Outcome()
			if o.Rounds > 0 {
				rounds = o.Rounds
				sp.SetAttributes(usageAttrs(o.Usage)...)
				sp.SetAttributes(attrStop.String(string(o.Stop)), attrContinuations.Int(o.Continuations))
			}
			if usd, priced := t.Cost(); priced {
				sp.SetAttributes(attrCostUSD.Float64(usd))
			}
		}
		sp.SetAttributes(attrRounds.Int(rounds))
		if status >= 500 || status == statusClientClosed {
			sp.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
			sp.SetStatus(codes.Error, "status "+strconv.Itoa(status))
		}
	}
	sp.End(trace.WithTimestamp(time.Now()))
}

// unjoinErr splits an errors.Join result into its errors.
func unjoinErr(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// requestCarrier reads and writes W3C trace context headers of a fasthttp
// request (propagation.TextMapCarrier).
type requestCarrier struct{ h *fasthttp.RequestHeader }

var _ propagation.TextMapCarrier = requestCarrier{}

// Get implements propagation.TextMapCarrier.
func (c requestCarrier) Get(key string) string { return string(c.h.Peek(key)) }

// Set implements propagation.TextMapCarrier.
func (c requestCarrier) Set(key, value string) { c.h.Set(key, value) }

// Keys implements propagation.TextMapCarrier.
func (c requestCarrier) Keys() []string {
	var keys []string
	for k := range c.h.All() {
		keys = append(keys, string(k))
	}
	return keys
}

// turnTrace is the exchange's trace as the turn engine's turn.Trace: nil
// (an untyped nil interface) when tracing is off.
func (x *exchange) turnTrace() turn.Trace {
	if x.trace == nil {
		return nil
	}
	return x.trace
}
