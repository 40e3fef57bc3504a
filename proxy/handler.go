package proxy

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Response headers shepherd adds.
const (
	headerSession   = "X-Shepherd-Session"
	headerRequestID = "X-Shepherd-Request-Id"
	headerTiming    = "Server-Timing"
	// headerAccelBuffering tells a buffering reverse proxy in front of
	// shepherd (nginx, and the ingresses built on it) to pass a streamed
	// reply on as it comes rather than hold it in its buffers.
	headerAccelBuffering = "X-Accel-Buffering"
)

var eventStream = []byte("text/event-stream")

// exchange is the per-request state of one proxied call. It is created by
// handle and handed to the stream writer, which runs after handle returns;
// from then on the writer owns it.
type exchange struct {
	route     route
	codec     rewrite.Codec // nil on pass-through routes
	call      hooks.Call
	requestID string
	start     time.Time
	upWait    time.Duration
	upResp    *fasthttp.Response
	// own is shepherd's own time on the request (ownTime), once measured.
	own         time.Duration
	ownMeasured bool
	// streamed: the reply is a stream (its overhead goes in a trailer).
	streamed bool
	// sessionSource says where the session id came from (access log).
	sessionSource sessionSource
	// crlf records that the upstream frames SSE lines with CRLF, so events
	// shepherd writes into the stream use the same framing.
	crlf bool
	// watch notices the client leaving while the upstream is waited on;
	// the stream writer takes it over from the handler.
	watch *clientWatch
	// feed is what the live feed knows of the request (events.go).
	feed requestFeed
	// routing is the request as the routing rules see it, and target
	// where it and its turn's follow-ups go (route_select.go).
	routing routeState
	target  routeTarget
	// turnIO holds a turn's writer and sender, so that they cost no
	// allocation of their own.
	turnIO struct {
		json   turnJSON
		stream turnStream
		sender upstreamSender
	}
	// trace is the request's spans; nil when tracing is off (tracing.go).
	trace *requestTrace
	// copies says which spans of the body forwarded are copies of the
	// agent's (upstream_gather.go).
	copies bodyCopies
}

// handle proxies one request, in steps: admit it, read its body, inspect
// it, identify its session, begin its turn, forward it upstream, respond.
// Each step that answers the request itself returns false.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	x := exchange{start: time.Now()}
	x.requestID = s.requestID(ctx)
	x.route = classifyHeader(&ctx.Request.Header, ctx.Path())
	if !s.admit(ctx, &x) {
		return
	}
	if ctx.RequestBodyStream() != nil { // bufferBody left it: cut-through
		s.handleCutThrough(ctx, &x)
		return
	}
	body, ok := s.readBody(ctx, &x)
	if !ok {
		return
	}
	in, ok := s.inspect(ctx, &x, body)
	if !ok {
		return
	}
	s.identify(ctx, &x, &in)
	if s.tracer != nil {
		s.traceRequest(ctx, &x, &in)
	}
	s.requestStarted(&x, &in)
	if !s.routeMatch(ctx, &x, &in, body) {
		return
	}
	t, body, ok := s.startTurn(ctx, &x, &in, body)
	if !ok {
		return
	}
	defer t.Settle() // a turn that does not run: its check reads the body
	built := body
	body = s.routeSelect(ctx, &x, t, in.view != nil && s.turnServes(ctx, &x, in.view), body)
	if rewrite.SameSlice(body, built) { // not rewritten for another model
		x.copies.src, x.copies.runs = t.SentCopies()
	}
	x.feed.turn = t
	x.watch = s.watchClient(ctx, x.route.name)
	defer func() { x.watch.stop() }() // nil once a stream's writer owns it
	if !s.forward(ctx, &x, body) {
		return
	}
	s.respond(ctx, &x, &in, t)
}

// admit refuses what shepherd does not serve: a protocol upgrade, a path
// no upstream serves.
func (s *Server) admit(ctx *fasthttp.RequestCtx, x *exchange) bool {
	if refuseUpgrade(ctx, x.route.provider) {
		s.finish(ctx, x, fasthttp.StatusUpgradeRequired)
		return false
	}
	if x.route.notFound {
		s.finish(ctx, x, writeError(ctx, x.route.provider, errNotFound))
		return false
	}
	return true
}

// readBody returns the request body, decoded, within the body limit.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, x *exchange) ([]byte, bool) {
	body, err := requestBody(ctx, x.route, s.cfg.Limits.MaxBodyBytes)
	if err != nil {
		s.finish(ctx, x, writeError(ctx, x.route.provider, err))
		return nil, false
	}
	return body, true
}

// inspection is what the handler learnt from a model request's body.
type inspection struct {
	// view is the full request view the hooks read; nil when no hook runs
	// (the body was only validated and peeked) or the route is no model
	// route.
	view     *conv.Request
	hints    rewrite.SessionHints
	hasHints bool // false on pass-through routes
	codec    rewrite.Codec
	body     []byte
}

// fingerprint is the conversation's fingerprint, for a session id, and
// whether the request opens a conversation (no fingerprint yet). Without
// hooks there is no state to keep: such an opening request gets no session.
func (in *inspection) fingerprint() (string, bool) {
	switch {
	case in.view != nil:
		return in.view.Fingerprint, in.view.Fingerprint == "" && in.view.Opening()
	case in.hasHints:
		return rewrite.RequestFingerprint(in.codec, in.body), false
	}
	return "", false
}

// stream reports whether the request asked for a streamed reply.
func (in *inspection) stream() bool { return in.hasHints && in.hints.Stream }

// inspect parses a model request: into the full view when hooks will read
// it, otherwise only validated and peeked for the session hints.
func (s *Server) inspect(ctx *fasthttp.RequestCtx, x *exchange, body []byte) (inspection, bool) {
	in, err := s.inspectBody(x, body)
	if err != nil {
		s.finish(ctx, x, writeError(ctx, x.route.provider, err))
		return in, false
	}
	return in, true
}

// inspectBody is inspect's work; the error is the request's refusal.
func (s *Server) inspectBody(x *exchange, body []byte) (inspection, error) {
	in := inspection{body: body}
	if !x.route.inspect {
		return in, nil
	}
	x.codec = x.route.api.NewCodec(s.views)
	in.codec = x.codec
	if x.route.noTurn || s.features.chain(x.route.api).Empty() {
		hs, err := rewrite.PeekRequestWith(s.views, x.route.api, body)
		if err != nil {
			return in, err
		}
		in.hints, in.hasHints = hs, true
	} else {
		v, err := x.codec.ParseRequest(body)
		if err != nil {
			return in, err
		}
		in.view = v
		if x.call.Side = s.sideRequest(x.codec, body, v); x.call.Side != "" {
			s.metrics.sideRequests.WithLabelValues(x.route.name, x.call.Side).Inc()
		}
		in.hints, in.hasHints = rewrite.SessionHints{Stream: v.Stream, MetadataUserID: v.MetadataUserID, PromptCacheKey: v.PromptCacheKey}, true
	}
	if x.route.streamByPath {
		in.hints.Stream = true
		if in.view != nil {
			in.view.Stream = true
		}
	}
	return in, nil
}

// identify fills in who the request is from: route, tenant and session.
func (s *Server) identify(ctx *fasthttp.RequestCtx, x *exchange, in *inspection) {
	x.call.Route = x.route.name
	x.call.RequestID = x.requestID
	x.call.Tenant = tenantOf(&ctx.Request)
	x.call.Agent = agentOf(&ctx.Request.Header)
	x.call.Features = hooks.ParseFeatures(ctx.Request.Header.Peek(hooks.FeaturesHeader))
	var hints *rewrite.SessionHints
	if in.hasHints {
		hints = &in.hints
	}
	x.call.SessionID, x.sessionSource = resolveSession(&ctx.Request.Header, s.cfg.Session.Header, hints, in.fingerprint)
}

// startTurn hands the request to the turn engine when it can serve the
// reply: model requests whose reply it can rewrite (JSON, and SSE streams
// of APIs with a stream splicer). Gemini's JSON-array stream (no ?alt=sse)
// and token counting (no reply to run hooks on) pass through untouched.
// It returns the turn (nil: pass through) and the body to send upstream;
// false when a hook answered the request.
func (s *Server) startTurn(ctx *fasthttp.RequestCtx, x *exchange, in *inspection, body []byte) (*turn.Turn, []byte, bool) {
	if in.view == nil || !s.turnServes(ctx, x, in.view) {
		return nil, body, true
	}
	t, out, short := s.beginTurn(ctx, x, in.view, body)
	return t, out, !short
}

// forward sends the request upstream and waits for the response headers;
// false when the request is answered (the client left, the upstream
// failed).
func (s *Server) forward(ctx *fasthttp.RequestCtx, x *exchange, body []byte) bool {
	return s.forwardBody(ctx, x, body, nil)
}

// forwardBody is forward with the body either whole (body) or arriving
// (cut, cut_through.go).
func (s *Server) forwardBody(ctx *fasthttp.RequestCtx, x *exchange, body []byte, cut *cutBody) bool {
	up := s.upstreamOf(x)
	upReq := fasthttp.AcquireRequest()
	x.upResp = fasthttp.AcquireResponse()
	prepareUpstreamRequest(upReq, &ctx.Request, up, body, x.route.inspect)
	x.target.apply(upReq, up)
	if x.trace != nil {
		x.trace.roundStarted(upReq, up, x.target.model)
	}
	if cut != nil {
		upReq.SetBodyStream(cut, cut.size)
	} else if b := setWatchedBody(upReq, x.upResp, body, x.watch); b != nil {
		b.gather.copies = x.copies
	}
	x.copies = bodyCopies{} // the agent's body is not held past the write
	t0 := time.Now()
	err := up.client.DoTimeout(upReq, x.upResp, s.cfg.Limits.UpstreamTimeout)
	x.upWait = time.Since(t0)
	if x.trace != nil {
		x.trace.roundResponded(x.upResp, err)
	}
	fasthttp.ReleaseRequest(upReq)
	if cut != nil {
		x.upWait -= cut.checked
		if cut.stopped() {
			fasthttp.ReleaseResponse(x.upResp)
			s.cutStopped(ctx, x, cut)
			return false
		}
	}
	s.metrics.observeUpstream(x.route.name, x.upWait)
	if err == nil {
		x.watch.received(x.upResp, phaseReadingReply)
	} else {
		x.watch.received(nil, phaseWaitingUpstream)
	}
	if x.watch.left() {
		fasthttp.ReleaseResponse(x.upResp)
		s.abandon(ctx, x)
		return false
	}
	if err != nil {
		fasthttp.ReleaseResponse(x.upResp)
		cerr := classifyUpstreamError(err)
		s.metrics.upstreamErrors.WithLabelValues(x.route.name, upstreamErrorKind(cerr)).Inc()
		s.log.Warn("upstream request failed", zap.String("request_id", x.requestID),
			zap.String("route", x.route.name), zap.String("kind", upstreamErrorKind(cerr)), zap.Error(err))
		s.finish(ctx, x, writeError(ctx, x.route.provider, cerr))
		return false
	}
	return true
}

// respond hands the upstream's response to the client: through the turn
// engine when a turn runs (streamed or whole), otherwise as it comes (an
// SSE stream event by event, a body of unknown length chunk by chunk when
// the request asked to stream or the route is a pass-through, else whole).
func (s *Server) respond(ctx *fasthttp.RequestCtx, x *exchange, in *inspection, t *turn.Turn) {
	copyResponseHeaders(&ctx.Response, x.upResp)
	s.setShepherdHeaders(ctx, x)
	if x.call.SessionID != "" && x.route.inspect && t == nil && x.sessionSource != sourceOpening && x.call.Side == "" {
		s.recorder.touch(state.Key{Tenant: x.call.Tenant, Session: x.call.SessionID})
	}

	status := x.upResp.StatusCode()
	switch isSSE := bytes.HasPrefix(x.upResp.Header.ContentType(), eventStream); {
	case isSSE && t != nil:
		x.watch.reading(phaseStreaming)
		markStreamed(ctx, x)
		s.streamTurn(ctx, x, t)
		x.watch = nil
	case isSSE:
		x.watch.reading(phaseStreaming)
		markStreamed(ctx, x)
		s.streamEvents(ctx, x)
		x.watch = nil
	case x.upResp.Header.ContentLength() < 0 && (in.stream() || !x.route.inspect):
		x.watch.reading(phaseStreaming)
		markStreamed(ctx, x)
		s.streamChunks(ctx, x)
		x.watch = nil
	case t != nil:
		if err := s.runJSONTurn(ctx, x, t); err != nil {
			s.replyFailed(ctx, x, err)
			return
		}
		s.setServerTiming(ctx, x)
	default:
		if err := s.copyBody(ctx, x); err != nil {
			s.replyFailed(ctx, x, err)
			return
		}
		s.setServerTiming(ctx, x)
	}
	s.finish(ctx, x, status)
}

// replyFailed ends a request whose upstream reply could not be read or
// merged: abandoned when the client left (the watcher cancelled it),
// otherwise answered with the error in the route's shape and counted.
func (s *Server) replyFailed(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	if x.watch.left() {
		s.abandon(ctx, x)
		return
	}
	cerr := classifyUpstreamError(err)
	s.metrics.upstreamErrors.WithLabelValues(x.route.name, upstreamErrorKind(cerr)).Inc()
	s.finish(ctx, x, writeError(ctx, x.route.provider, cerr))
}

// statusClientClosed is the status the access log and request metrics give
// a request whose client left before its reply (nginx's 499).
const statusClientClosed = 499

// abandon ends a request whose client went away: its upstream request was
// cancelled (clientWatch); nothing is sent and the connection is closed.
func (s *Server) abandon(ctx *fasthttp.RequestCtx, x *exchange) {
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	s.log.Debug("client left; upstream request cancelled", zap.String("request_id", x.requestID),
		zap.String("route", x.route.name))
	s.finish(ctx, x, statusClientClosed)
}

// copyBody reads the whole upstream body into the client response.
func (s *Server) copyBody(ctx *fasthttp.RequestCtx, x *exchange) error {
	defer fasthttp.ReleaseResponse(x.upResp)
	bs := x.upResp.BodyStream()
	if bs == nil {
		ctx.Response.SetBodyRaw(append([]byte(nil), x.upResp.Body()...))
		return nil
	}
	buf := chunkPool.Get().(*[]byte)
	_, err := io.CopyBuffer(ctx.Response.BodyWriter(), bs, *buf)
	chunkPool.Put(buf)
	if cerr := x.upResp.CloseBodyStream(); err == nil {
		err = cerr
	}
	return err
}

// markStreamed sets the headers of every reply shepherd streams:
// "X-Accel-Buffering: no", replacing any value the upstream sent. The
// headers are decided: shepherd's own time is measured now, before the
// stream writers copy the exchange (their trailer reports it).
func markStreamed(ctx *fasthttp.RequestCtx, x *exchange) {
	ctx.Response.Header.Set(headerAccelBuffering, "no")
	x.streamed = true
	x.ownTime()
}

func (s *Server) setShepherdHeaders(ctx *fasthttp.RequestCtx, x *exchange) {
	ctx.Response.Header.Set(headerRequestID, x.requestID)
	if x.call.SessionID != "" {
		ctx.Response.Header.Set(headerSession, x.call.SessionID)
	}
}

// setServerTiming adds a Server-Timing header: time inside shepherd and time
// waiting for the upstream, in milliseconds.
func (s *Server) setServerTiming(ctx *fasthttp.RequestCtx, x *exchange) {
	own := x.ownTime()
	b := make([]byte, 0, 64)
	b = append(b, "shepherd;dur="...)
	b = strconv.AppendFloat(b, float64(own.Microseconds())/1000, 'f', 3, 64)
	b = append(b, ", upstream;dur="...)
	b = strconv.AppendFloat(b, float64(x.upWait.Microseconds())/1000, 'f', 3, 64)
	ctx.Response.Header.SetBytesV(headerTiming, b)
}

// finish records metrics and the access log of a request whose response is
// fully decided (for streams: whose headers are decided).
func (s *Server) finish(ctx *fasthttp.RequestCtx, x *exchange, status int) {
	own := x.ownTime()
	s.requestFinished(x, status)
	if x.trace != nil {
		s.traceFinished(x, status)
	}
	if ctx.Response.Header.Peek(headerRequestID) == nil {
		ctx.Response.Header.Set(headerRequestID, x.requestID)
	}
	if !x.streamed {
		var buf [32]byte
		ctx.Response.Header.SetBytesV(headerOverhead, appendOverhead(buf[:0], own))
	}
	s.metrics.countRequest(x.route.name, status)
	s.metrics.observeOverhead(x.route.name, own)
	if ce := s.log.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(zap.String("request_id", x.requestID), zap.String("route", x.route.name),
			zap.Int("status", status), zap.String("session", x.call.SessionID),
			zap.String("session_source", string(x.sessionSource)),
			zap.Duration("upstream", x.upWait), zap.Duration("total", time.Since(x.start)),
			zap.Float64("overhead_ms", overheadMillis(own)))
	}
}

func upstreamErrorKind(err error) string {
	switch {
	case errors.Is(err, errUpstreamTimeout):
		return "timeout"
	case errors.Is(err, errUpstreamUnreachable):
		return "unreachable"
	}
	return "broken"
}

var altSSE = []byte("sse")

// turnServes reports whether the turn engine can serve this request's reply.
// A request whose history is kept upstream (Responses previous_response_id)
// passes through: a call shepherd answered would stay unanswered in the
// upstream chain, which the ledger cannot repair because the history is
// never resent. Continuing that chain upstream is future work.
func (s *Server) turnServes(ctx *fasthttp.RequestCtx, x *exchange, view *conv.Request) bool {
	if view.PreviousResponseID != "" {
		return false
	}
	if !view.Stream {
		return true
	}
	if x.route.streamByPath && !bytes.Equal(ctx.QueryArgs().Peek("alt"), altSSE) {
		return false
	}
	return x.route.api.NewSplicer != nil
}
