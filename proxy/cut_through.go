package proxy

import (
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// Cut-through forwarding: a long request body that shepherd forwards
// unchanged (a pass-through route's; a model request's when no hook runs
// on its API, no routing rule, no Content-Encoding, tracing off) goes
// upstream while it still arrives, as nginx's proxy_request_buffering off
// sends it, instead of after it is whole. Its bytes are written upstream
// as they are read, all but the last one; once the body is whole it is
// checked as any request is (validated, peeked, its session identified),
// and only then is its last byte sent. A body that fails the check (not
// JSON, a repeated key, a wrong type) is refused in the API's shape as
// before, and the upstream, which has not received the whole body, never
// sees a request: its connection is closed. A client that stops sending
// mid-body is refused as a body read failure (408, 400) and its upstream
// connection closed the same way. The upstream's time (Server-Timing,
// shepherd_upstream_duration_seconds) then includes the body's upload; the
// check's time counts as shepherd's own.

// cutThroughChunk bounds each read of a cut-through body, so that the
// upstream reads one piece while the next is read from the client (on
// loopback a whole body is often waiting in the socket buffer: read in one
// piece, it would go upstream after one long copy, not beside it).
const cutThroughChunk = 128 << 10

// cutThroughCandidate reports whether the request's body is to be forwarded
// while it arrives (called before it is read; rt is the request's route): a body of at least
// limits.cut_through_bytes that goes upstream as sent. A pass-through
// route's body (a file upload, say) always does; a model request's when no
// feature reads it, no routing rule picks its upstream from it, it needs
// no decoding, and tracing is off (a traced request's upstream headers
// carry the span its body names). Never when limits.upstream_timeout is
// shorter than limits.body_timeout.
func (s *Server) cutThroughCandidate(ctx *fasthttp.RequestCtx, rt route) bool {
	lim := &s.cfg.Limits
	size, least := ctx.Request.Header.ContentLength(), lim.CutThroughBytes
	if least <= 0 || size < least || size > lim.MaxBodyBytes {
		return false
	}
	if lim.UpstreamTimeout > 0 && lim.UpstreamTimeout < lim.BodyTimeout {
		// The upstream write waits on the client: a slow upload within
		// the body timeout would hit the upstream's write deadline.
		return false
	}
	switch {
	case rt.notFound:
		return false
	case !rt.inspect:
		return true
	case s.router != nil || s.tracer != nil || len(contentCodings(&ctx.Request.Header)) > 0:
		return false
	}
	return rt.api != nil && (rt.noTurn || s.features.chain(rt.api).Empty())
}

// cutBody is the upstream request body of a cut-through request: it copies
// the client's body stream upstream as it arrives, holding back the last
// byte until the whole body passed check.
type cutBody struct {
	src   io.Reader
	buf   *pooledBody
	size  int
	check func(body []byte) error
	// prefetch is fed the body as it arrives, for check's parse.
	prefetch *rewrite.BodyPrefetch
	// readErr is the client side's failure (the body did not arrive);
	// checkErr the body's refusal. Either stops the upstream request.
	readErr, checkErr error
	// checked is the time check took (shepherd's own, inside the upstream
	// round trip's time).
	checked time.Duration
}

var errCutThroughStopped = errors.New("proxy: request body not forwarded")

// SupportsBodyWriteTo lets fasthttp write the body through WriteTo.
func (b *cutBody) SupportsBodyWriteTo() bool { return true }

// Read is not used (fasthttp writes through WriteTo).
func (b *cutBody) Read([]byte) (int, error) { return 0, errCutThroughStopped }

// WriteTo copies the body to the upstream connection as it arrives.
func (b *cutBody) WriteTo(w io.Writer) (int64, error) {
	fl, _ := w.(interface{ Flush() error })
	p := b.buf
	p.b = p.b[:0]
	sent := 0
	for len(p.b) < b.size {
		n, err := b.src.Read(p.b[len(p.b):min(b.size, len(p.b)+cutThroughChunk)])
		p.b = p.b[:len(p.b)+n]
		if end := min(len(p.b), b.size-1); end > sent {
			if _, werr := w.Write(p.b[sent:end]); werr != nil {
				return int64(sent), werr
			}
			sent = end
			if fl != nil {
				if werr := fl.Flush(); werr != nil {
					return int64(sent), werr
				}
			}
		}
		if n > 0 {
			b.prefetch.Feed(p.b) // once the piece is on its way upstream: its comparison waits, not the piece
		}
		if err != nil && !(errors.Is(err, io.EOF) && len(p.b) == b.size) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			b.readErr = err
			return int64(sent), errCutThroughStopped
		}
	}
	t0 := time.Now()
	err := b.check(p.b)
	b.checked = time.Since(t0)
	if err != nil {
		b.checkErr = err
		return int64(sent), errCutThroughStopped
	}
	n, err := w.Write(p.b[sent:])
	return int64(sent + n), err
}

// stopped reports whether the body did not go upstream whole: the client
// failed to send it or it failed its check.
func (b *cutBody) stopped() bool { return b.readErr != nil || b.checkErr != nil }

// handleCutThrough is handle for a request whose body goes upstream while
// it arrives: the body's check (inspect, identify, the feed's start, the
// client watch) runs once it is whole, before its last byte is sent.
func (s *Server) handleCutThrough(ctx *fasthttp.RequestCtx, x *exchange) {
	size := ctx.Request.Header.ContentLength()
	p := requestBodyBuffer(ctx, size)
	var in inspection
	cut := &cutBody{src: ctx.RequestBodyStream(), buf: p, size: size, prefetch: s.prefetchBody(ctx, x.route)}
	defer cut.prefetch.Close() // before the buffer can hold another body
	cut.check = func(body []byte) error {
		var err error
		if in, err = s.inspectBody(x, body); err != nil {
			return err
		}
		s.identify(ctx, x, &in)
		s.requestStarted(x, &in)
		x.watch = s.watchClient(ctx, x.route.name)
		if c := connOf(x.upResp); c != nil && !x.watch.sending(c) {
			return errClientGone
		}
		return nil
	}
	defer func() { x.watch.stop() }() // nil once a stream's writer owns it
	ok := s.forwardBody(ctx, x, nil, cut)
	if len(p.b) == size {
		ctx.Request.SetBodyRaw(p.b) // the stream is read: the connection may serve another request
	}
	s.metrics.cutThrough.WithLabelValues(x.route.name, cut.result(ok, x.watch)).Inc()
	if !ok {
		return
	}
	s.respond(ctx, x, &in, nil)
}

// result is the request's shepherd_cut_through_requests_total result; ok
// is whether the upstream answered.
func (b *cutBody) result(ok bool, w *clientWatch) string {
	switch {
	case errors.Is(b.checkErr, errClientGone) || w.left():
		return "client_left"
	case b.checkErr != nil:
		return "refused"
	case b.readErr != nil:
		return "incomplete"
	case !ok:
		return "upstream_failed"
	}
	return "forwarded"
}

// cutStopped answers a cut-through request whose body did not go upstream
// whole; its upstream connection is already closed (the transport closes
// one whose request failed to write), so the upstream saw no request.
func (s *Server) cutStopped(ctx *fasthttp.RequestCtx, x *exchange, cut *cutBody) {
	switch {
	case errors.Is(cut.checkErr, errClientGone):
		s.abandon(ctx, x)
	case cut.checkErr != nil:
		s.finish(ctx, x, writeError(ctx, x.route.provider, cut.checkErr))
	default:
		status := writeError(ctx, x.route.provider, refusedError(cut.readErr))
		ctx.SetConnectionClose() // the rest of the body is unread
		s.finish(ctx, x, status)
	}
}
