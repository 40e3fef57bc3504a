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
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Response headers shepherd adds.
const (
	headerSession   = "X-Shepherd-Session"
	headerRequestID = "X-Shepherd-Request-Id"
	headerTiming    = "Server-Timing"
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
	// sessionSource says where the session id came from (access log).
	sessionSource sessionSource
	// crlf records that the upstream frames SSE lines with CRLF, so events
	// shepherd writes into the stream use the same framing.
	crlf bool
	// watch notices the client leaving while the upstream is waited on;
	// the stream writer takes it over from the handler.
	watch *clientWatch
}

// handle proxies one request.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	x := exchange{start: time.Now()}
	x.requestID = s.requestID(ctx)
	h := &ctx.Request.Header
	x.route = classifyHeader(h, ctx.Path())
	if refuseUpgrade(ctx, x.route.provider) {
		s.finish(ctx, &x, fasthttp.StatusUpgradeRequired)
		return
	}
	if x.route.name == "not_found" {
		s.finish(ctx, &x, writeError(ctx, x.route.provider, errNotFound))
		return
	}
	up := s.upstreams[x.route.provider]
	body, berr := requestBody(ctx, x.route, s.cfg.Limits.MaxBodyBytes)
	if berr != nil {
		s.finish(ctx, &x, writeError(ctx, x.route.provider, berr))
		return
	}

	// With hooks, the request is parsed into the full view they read;
	// without, only validated and peeked for the session hints.
	var view *conv.Request
	var hints *rewrite.SessionHints
	fingerprint := func() (string, bool) { return "", false }
	if x.route.inspect {
		x.codec = x.route.api.NewCodec(s.views)
		if s.features.chain(x.route.api).Empty() || x.route.name == "count_tokens" {
			hs, err := rewrite.PeekRequest(x.route.api, body)
			if err != nil {
				s.finish(ctx, &x, writeError(ctx, x.route.provider, err))
				return
			}
			hints = &hs
			// Without hooks there is no state to keep: an opening request
			// (no fingerprint yet) gets no session.
			fingerprint = func() (string, bool) { return rewrite.RequestFingerprint(x.codec, body), false }
		} else {
			v, err := x.codec.ParseRequest(body)
			if err != nil {
				s.finish(ctx, &x, writeError(ctx, x.route.provider, err))
				return
			}
			view = v
			if x.call.Side = s.sideRequest(x.codec, body); x.call.Side != "" {
				s.metrics.sideRequests.WithLabelValues(x.route.name, x.call.Side).Inc()
			}
			hints = &rewrite.SessionHints{Stream: v.Stream, MetadataUserID: v.MetadataUserID, PromptCacheKey: v.PromptCacheKey}
			fingerprint = func() (string, bool) { return v.Fingerprint, v.Fingerprint == "" && v.Opening() }
		}
		if x.route.streamByPath {
			hints.Stream = true
			if view != nil {
				view.Stream = true
			}
		}
	}

	x.call.Route = x.route.name
	x.call.RequestID = x.requestID
	x.call.Tenant = tenantOf(&ctx.Request)
	sid, src := resolveSession(h, s.cfg.Session.Header, hints, fingerprint)
	x.call.SessionID = sid
	x.sessionSource = src

	// The hook chain and the turn engine serve model requests whose reply
	// they can rewrite: JSON, and SSE streams of APIs with a stream splicer.
	// Gemini's JSON-array stream (no ?alt=sse) and count_tokens requests
	// (no reply to run hooks on) pass through untouched.
	var t *turn
	if view != nil && s.turnServes(ctx, &x, view) {
		var short bool
		if t, body, short = s.prepareTurn(ctx, &x, view, body); short {
			return
		}
	}

	x.watch = s.watchClient(ctx, x.route.name)
	defer func() { x.watch.stop() }() // nil once a stream's writer owns it
	upReq := fasthttp.AcquireRequest()
	x.upResp = fasthttp.AcquireResponse()
	prepareUpstreamRequest(upReq, &ctx.Request, up, body, x.route.inspect)
	setWatchedBody(upReq, x.upResp, body, x.watch)
	t0 := time.Now()
	err := up.client.DoTimeout(upReq, x.upResp, s.cfg.Limits.UpstreamTimeout)
	x.upWait = time.Since(t0)
	fasthttp.ReleaseRequest(upReq)
	s.metrics.observeUpstream(x.route.name, x.upWait)
	if err == nil {
		x.watch.received(x.upResp, phaseReadingReply)
	} else {
		x.watch.received(nil, phaseWaitingUpstream)
	}
	if x.watch.left() {
		fasthttp.ReleaseResponse(x.upResp)
		s.abandon(ctx, &x)
		return
	}
	if err != nil {
		fasthttp.ReleaseResponse(x.upResp)
		cerr := classifyUpstreamError(err)
		s.metrics.upstreamErrors.WithLabelValues(x.route.name, upstreamErrorKind(cerr)).Inc()
		s.log.Warn("upstream request failed", zap.String("request_id", x.requestID),
			zap.String("route", x.route.name), zap.String("kind", upstreamErrorKind(cerr)), zap.Error(err))
		s.finish(ctx, &x, writeError(ctx, x.route.provider, cerr))
		return
	}

	copyResponseHeaders(&ctx.Response, x.upResp)
	s.setShepherdHeaders(ctx, &x)
	if sid != "" && x.route.inspect && t == nil && src != sourceOpening && x.call.Side == "" {
		s.recorder.touch(state.Key{Tenant: x.call.Tenant, Session: sid})
	}

	status := x.upResp.StatusCode()
	switch isSSE := bytes.HasPrefix(x.upResp.Header.ContentType(), eventStream); {
	case isSSE && t != nil:
		x.watch.reading(phaseStreaming)
		t.streamTurn(ctx)
		x.watch = nil
	case isSSE:
		x.watch.reading(phaseStreaming)
		s.streamEvents(ctx, &x)
		x.watch = nil
	case x.upResp.Header.ContentLength() < 0 && (hints != nil && hints.Stream || x.route.name == "passthrough"):
		x.watch.reading(phaseStreaming)
		s.streamChunks(ctx, &x)
		x.watch = nil
	case t != nil:
		if err := t.finishJSON(x.upResp); err != nil {
			s.replyFailed(ctx, &x, err)
			return
		}
		s.setServerTiming(ctx, &x)
	default:
		if err := s.copyBody(ctx, &x); err != nil {
			s.replyFailed(ctx, &x, err)
			return
		}
		s.setServerTiming(ctx, &x)
	}
	s.finish(ctx, &x, status)
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

func (s *Server) hookFailed(x *exchange, err error) {
	var he *hooks.HookError
	name := "unknown"
	if errors.As(err, &he) {
		name = he.Hook
	}
	s.metrics.hookErrors.WithLabelValues(name).Inc()
	s.log.Warn("hook failed; continuing without it", zap.String("request_id", x.requestID),
		zap.String("route", x.route.name), zap.Error(err))
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

func (s *Server) setShepherdHeaders(ctx *fasthttp.RequestCtx, x *exchange) {
	ctx.Response.Header.Set(headerRequestID, x.requestID)
	if x.call.SessionID != "" {
		ctx.Response.Header.Set(headerSession, x.call.SessionID)
	}
}

// setServerTiming adds a Server-Timing header: time inside shepherd and time
// waiting for the upstream, in milliseconds.
func (s *Server) setServerTiming(ctx *fasthttp.RequestCtx, x *exchange) {
	total := time.Since(x.start)
	own := total - x.upWait
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
	if ctx.Response.Header.Peek(headerRequestID) == nil {
		ctx.Response.Header.Set(headerRequestID, x.requestID)
	}
	s.metrics.countRequest(x.route.name, status)
	s.metrics.observeOverhead(x.route.name, time.Since(x.start)-x.upWait)
	if ce := s.log.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(zap.String("request_id", x.requestID), zap.String("route", x.route.name),
			zap.Int("status", status), zap.String("session", x.call.SessionID),
			zap.String("session_source", string(x.sessionSource)),
			zap.Duration("upstream", x.upWait), zap.Duration("total", time.Since(x.start)))
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
