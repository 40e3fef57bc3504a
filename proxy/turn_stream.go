package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// streamTurn serves a streamed reply through the turn engine. A splicer
// forwards text and thinking to the agent as they arrive and holds tool
// calls; once a stream is complete it is decided exactly like a JSON reply;
// the agent's tool calls are released; a follow-up is streamed into the
// same reply; the terminal events come once at the end.
//
// The writer runs after the handler returned, so everything it needs from
// the request is copied first: the exchange, and the request line and
// headers in wire form (parsed back only if a follow-up is sent).
func (s *Server) streamTurn(ctx *fasthttp.RequestCtx, x *exchange, t *turn.Turn) {
	head := newRequestHead(&ctx.Request.Header)
	xs := *x
	x.feed.handOff() // xs emits request.finished when the stream ends
	x.trace = nil    // and ends the request's spans
	releaseRequestBody(ctx)
	s.sendStream(ctx, newStreamBody(func(w io.Writer) { s.pipeTurn(w, &xs, t, head) }), &xs)
}

// pipeTurn is the stream writer of a turn; head is the agent's request line
// and headers, for follow-ups. Hooks run under a background context: the
// RequestCtx is not the writer's to touch.
//
// Its goroutine waits in the turn's upstream read for the whole stream, so
// pipeTurn keeps its frame small (one deferred call, the writer and sender
// set field by field in the exchange): an idle stream's stack stays at 4 KB
// only while every frame under that read is small (turn.Turn.Run).
func (s *Server) pipeTurn(w io.Writer, x *exchange, t *turn.Turn, head requestHead) {
	defer s.streamTurnEnded(x, time.Now())
	s.metrics.streamsOpen.Inc()
	tio := &x.turnIO
	tio.stream.s, tio.stream.w, tio.stream.x, tio.stream.resp = s, w, x, x.upResp
	tio.stream.sp = x.route.api.NewSplicer()
	tio.sender.s, tio.sender.x, tio.sender.head = s, x, head
	err := t.Run(context.Background(), &tio.stream, &tio.sender)
	if errors.Is(err, turn.ErrClientGone) {
		s.streamClientGone(x)
	}
	s.requestFinished(x, fasthttp.StatusOK)
	if x.trace != nil {
		s.traceFinished(x, fasthttp.StatusOK)
	}
}

// streamTurnEnded is what pipeTurn leaves, even when it panics: the client
// watch stopped, the stream's duration observed, and the open streams
// gauge lowered.
func (s *Server) streamTurnEnded(x *exchange, start time.Time) {
	x.watch.stop()
	s.metrics.streamDuration.WithLabelValues(x.route.name).Observe(time.Since(start).Seconds())
	s.metrics.streamsOpen.Dec()
}

// turnStream is the turn engine's writer for an SSE reply: a stream
// splicer forwards each upstream stream's text as it arrives, releases its
// tool calls once the reply is decided, and writes the terminal events at
// the end.
type turnStream struct {
	s    *Server
	w    io.Writer
	x    *exchange
	resp *fasthttp.Response // the upstream stream to read next
	sp   rewrite.StreamSplicer
}

var _ turn.Writer = (*turnStream)(nil)

// errStreamBroke marks a stream that ended with shepherd's error event.
var errStreamBroke = errors.New("proxy: upstream stream broke")

// Read implements turn.Writer. The stream's goroutine spends its life in
// the spliceStream call, so Read's frame holds nothing else: what follows
// runs in ended's.
func (ts *turnStream) Read() ([]byte, bool, error) {
	clientGone, upErr := ts.s.spliceStream(ts.w, ts.x, ts.resp, ts.sp)
	return ts.ended(clientGone, upErr)
}

// ended is Read's result once the upstream stream is over.
//
//go:noinline
func (ts *turnStream) ended(clientGone bool, upErr error) ([]byte, bool, error) {
	s, x := ts.s, ts.x
	fasthttp.ReleaseResponse(ts.resp)
	ts.resp = nil
	switch {
	case clientGone || upErr != nil && x.watch.left():
		return nil, false, turn.ErrClientGone
	case upErr != nil:
		s.writeStreamError(ts.w, x, upErr)
		return nil, false, fmt.Errorf("%w: %w", errStreamBroke, upErr)
	case !ts.sp.Done():
		s.writeStreamError(ts.w, x, io.ErrUnexpectedEOF)
		return nil, false, fmt.Errorf("%w: %w", errStreamBroke, io.ErrUnexpectedEOF)
	}
	reply, err := ts.sp.Reply()
	if err != nil {
		// The stream ended with the provider's own error event, which the
		// splicer already forwarded.
		return nil, false, nil
	}
	return reply, true, nil
}

var _ turn.CallObserving = (*turnStream)(nil)

// ObserveCalls implements turn.CallObserving: the splicer reports the
// calls while they stream when it can (rewrite.CallObserving); otherwise
// the engine reports them from each reply's view.
func (ts *turnStream) ObserveCalls(fn conv.CallObserver) {
	if co, ok := ts.sp.(rewrite.CallObserving); ok {
		co.ObserveCalls(fn)
	}
}

// Release implements turn.Writer.
func (ts *turnStream) Release(remove, first []int) error {
	out, err := ts.sp.Release(remove, first)
	if err != nil {
		ts.s.writeStreamError(ts.w, ts.x, err)
		return fmt.Errorf("%w: %w", errStreamBroke, err)
	}
	if !write(ts.w, out) {
		return turn.ErrClientGone
	}
	return nil
}

// Follow implements turn.Writer: the follow-up must be a 200 event stream;
// it continues the last reply's text block (cont) or follows it.
func (ts *turnStream) Follow(resp *fasthttp.Response, cont bool) error {
	if resp.StatusCode() != fasthttp.StatusOK || !bytes.HasPrefix(resp.Header.ContentType(), eventStream) {
		status := resp.StatusCode()
		_, _ = readAll(resp)
		fasthttp.ReleaseResponse(resp)
		return fmt.Errorf("proxy: follow-up answered %d, not an event stream", status)
	}
	if cs, ok := ts.sp.(rewrite.ContinueSplicer); cont && ok {
		cs.Continue()
	} else {
		ts.sp.Next()
	}
	ts.resp = resp
	return nil
}

// Finish implements turn.Writer: the terminal events, once. A passed reply
// (the provider's error event) was already forwarded whole.
func (ts *turnStream) Finish(f turn.Final) {
	if f.Passed {
		return
	}
	out, err := ts.sp.Finish()
	if err != nil {
		ts.s.writeStreamError(ts.w, ts.x, err)
		return
	}
	write(ts.w, out)
}

// keepAlive is the SSE comment line a held turn writes between events,
// for the APIs whose clients ignore comment lines (the descriptor's
// KeepAlive otherwise).
var keepAlive = []byte(": keepalive\n\n")

// KeepAlive implements turn.Writer: the API's keepalive bytes (an SSE
// comment unless its descriptor says otherwise), flushed, in the stream's
// line endings.
func (ts *turnStream) KeepAlive() error {
	b := keepAlive
	if api := ts.x.route.api; api != nil && api.KeepAlive != nil {
		b = api.KeepAlive
	}
	if ts.x.crlf {
		b = bytes.ReplaceAll(b, lf, crlf)
	}
	if ts.x.watch.left() || !write(ts.w, b) {
		return turn.ErrClientGone
	}
	return nil
}

// spliceStream feeds one upstream stream through the splicer, writing what
// it returns (sent before the upstream is read again, and at the end). It
// reports whether the client went away and the upstream's error, and closes
// the upstream body.
func (s *Server) spliceStream(w io.Writer, x *exchange, upResp *fasthttp.Response, sp rewrite.StreamSplicer) (clientGone bool, upErr error) {
	body := s.openUpstreamBody(upResp, w)
	defer body.close()
	clientGone, readErr, feedErr := spliceEvents(rewrite.NewReader(body), w, sp, &x.crlf)
	switch {
	case clientGone:
		body.abort()
		return true, nil
	case feedErr != nil:
		return false, feedErr
	case readErr != nil:
		return false, body.cause(readErr)
	}
	return false, nil
}

// spliceEvents is the loop of spliceStream: each event of r goes through
// sp and what sp returns is written to w (flushed by the next upstream
// read, streamWriter). It notes whether the upstream frames its events
// with CRLF and reports whether the client went away, the upstream's read
// error or the splicer's error. It allocates nothing per event the splicer
// forwards (TestSpliceEventsAllocs): the splicer takes each event through
// a pointer to the one the Reader keeps (NextEvent).
func spliceEvents(r *rewrite.Reader, w io.Writer, sp rewrite.StreamSplicer, crlfSeen *bool) (clientGone bool, readErr, feedErr error) {
	for {
		ev, err := r.NextEvent()
		if len(ev.Raw) > 0 {
			if gone, ferr := spliceEvent(ev, w, sp, crlfSeen); gone || ferr != nil {
				return gone, nil, ferr
			}
		}
		if err != nil {
			gone, readErr := spliceEnded(w, err)
			return gone, readErr, nil
		}
	}
}

// spliceEvent feeds one event to sp and writes what it returns; gone
// reports that the client went away. It and spliceEnded run in frames of
// their own, so that spliceEvents' frame, which sits under every upstream
// read of a streamed turn, stays small (turn.Turn.Run).
//
//go:noinline
func spliceEvent(ev *rewrite.Event, w io.Writer, sp rewrite.StreamSplicer, crlfSeen *bool) (gone bool, feedErr error) {
	if !sseEventEnded(ev.Raw) {
		return false, nil // cut inside this event: dropped (forwardEvents)
	}
	if !*crlfSeen && bytes.HasSuffix(ev.Raw, crlf) {
		*crlfSeen = true
	}
	out, err := sp.Feed(ev)
	if err != nil {
		return false, err
	}
	if len(out) > 0 {
		if _, err := w.Write(out); err != nil {
			return true, nil
		}
	}
	return false, nil
}

// spliceEnded is the end of spliceEvents' stream on err, the reader's
// error: io.EOF (the rest flushed), the client gone, or the upstream's
// read error.
//
//go:noinline
func spliceEnded(w io.Writer, err error) (gone bool, readErr error) {
	switch {
	case err == io.EOF:
		return !flush(w), nil
	case clientLeft(err) || writeFailed(w):
		return true, nil
	}
	return false, err
}

// write writes b and flushes it (with whatever the stream had pending) as
// one chunk; false means the client went away.
func write(w io.Writer, b []byte) bool {
	if len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return false
		}
	}
	return flush(w)
}

// writeStreamError ends an SSE stream with the API's own error event,
// framed like the upstream's events.
func (s *Server) writeStreamError(w io.Writer, x *exchange, err error) {
	s.endStreamWithError(w, x, err, x.sseErrorEvent)
}

// endStreamWithError counts and logs a stream that broke and writes tail's
// rendering of err (the stream syntax's error form; nil writes nothing).
func (s *Server) endStreamWithError(w io.Writer, x *exchange, err error, tail func(status int, msg string) []byte) {
	cerr := err
	if !errors.Is(err, errShuttingDown) && !errors.Is(err, errUpstreamTimeout) {
		cerr = classifyUpstreamError(err)
	}
	s.metrics.upstreamErrors.WithLabelValues(x.route.name, upstreamErrorKind(cerr)).Inc()
	s.log.Warn("upstream stream broke", zap.String("request_id", x.requestID),
		zap.String("route", x.route.name), zap.Error(err))
	if tail == nil {
		return
	}
	status, msg := statusOf(cerr)
	write(w, tail(status, msg))
}

// sseErrorEvent renders the API's stream error event, framed like the
// upstream's events; nil on a pass-through route (no API to speak).
func (x *exchange) sseErrorEvent(status int, msg string) []byte {
	if x.codec == nil {
		return nil
	}
	ev := x.codec.StreamErrorEvent(status, msg)
	if x.crlf {
		ev = bytes.ReplaceAll(ev, lf, crlf)
	}
	return ev
}

// sseEventEnded reports whether raw, an event's bytes, ends with the blank
// line that completes an SSE event (any of the three line endings).
func sseEventEnded(raw []byte) bool {
	n := len(raw)
	switch {
	case n >= 2 && raw[n-2] == '\r' && raw[n-1] == '\n':
		n -= 2
	case n >= 1 && (raw[n-1] == '\n' || raw[n-1] == '\r'):
		n--
	default:
		return false
	}
	return n == 0 || raw[n-1] == '\n' || raw[n-1] == '\r'
}
