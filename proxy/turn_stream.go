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

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// streamTurn serves a streamed reply through the turn engine. A splicer
// forwards text and thinking to the agent as they arrive and holds tool
// calls; once a stream is complete it is decided exactly like a JSON reply
// (replyLoop.step); the agent's tool calls are released; a follow-up is
// streamed into the same reply; the terminal events come once at the end.
//
// The writer runs after the handler returned, so everything it needs from
// the request is copied first: the request line and headers in wire form
// (parsed back into t.tmpl only if a follow-up is sent).
func (t *turn) streamTurn(ctx *fasthttp.RequestCtx) {
	head := newRequestHead(&ctx.Request.Header)
	t.tmpl = nil
	t.hctx = context.Background()
	t.ctx = nil
	xs := *t.x
	t.x = &xs
	releaseRequestBody(ctx)
	ctx.SetBodyStream(newStreamBody(func(w io.Writer) { t.s.pipeTurn(w, t, head) }), -1)
}

// pipeTurn is the stream writer of a turn; head is the agent's request line
// and headers, for follow-ups.
func (s *Server) pipeTurn(w io.Writer, t *turn, head requestHead) {
	x := t.x
	start := time.Now()
	s.metrics.streamsOpen.Inc()
	defer s.metrics.streamsOpen.Dec()
	saved := false
	defer func() {
		if !saved {
			t.save()
		}
	}()
	defer func() { s.metrics.streamDuration.WithLabelValues(x.route.name).Observe(time.Since(start).Seconds()) }()

	defer x.watch.stop()

	sp := x.route.api.NewSplicer()
	l := t.newLoop()
	upResp := x.upResp
	for {
		clientGone, upErr := s.spliceStream(w, x, upResp, sp)
		fasthttp.ReleaseResponse(upResp)
		switch {
		case clientGone || upErr != nil && x.watch.left():
			s.streamClientGone(x)
			return
		case upErr != nil:
			s.writeStreamError(w, x, upErr)
			return
		case !sp.Done():
			s.writeStreamError(w, x, io.ErrUnexpectedEOF)
			return
		}
		reply, err := sp.Reply()
		if err != nil {
			// The stream ended with the provider's own error event, which
			// the splicer already forwarded.
			return
		}
		st, ok := l.step(reply)
		if !ok {
			st = stepResult{}
		}
		out, err := sp.Release(st.remove, st.first)
		if err != nil {
			s.writeStreamError(w, x, err)
			return
		}
		if !write(w, out) {
			s.streamClientGone(x)
			return
		}
		if st.follow == nil {
			break
		}
		next, err := s.followUpStream(t, head, st.follow)
		l.countFollowUp(st.cont)
		if err != nil && x.watch.left() {
			s.streamClientGone(x)
			return
		}
		if err != nil {
			t.warn("follow-up upstream failed; the agent gets the reply so far", err)
			l.endRecovery(true)
			break
		}
		if cs, ok := sp.(rewrite.ContinueSplicer); st.cont && ok {
			cs.Continue()
		} else {
			sp.Next()
		}
		upResp = next
	}
	l.endRecovery(false)
	out, err := sp.Finish()
	if err != nil {
		s.writeStreamError(w, x, err)
		return
	}
	// Save before the agent sees the end of the stream: an SDK returns at
	// the terminal event and may send the next request at once, which must
	// find this turn's ledger entries.
	l.finish(nil)
	t.save()
	saved = true
	write(w, out)
}

// followUpStream sends a streamed follow-up and returns its response once it
// is known to be a 200 event stream. The first follow-up of a turn parses
// the agent's request head into t.tmpl.
func (s *Server) followUpStream(t *turn, head requestHead, body []byte) (*fasthttp.Response, error) {
	if t.tmpl == nil {
		tmpl, err := head.request()
		if err != nil {
			return nil, err
		}
		t.tmpl = tmpl
	}
	resp, err := s.sendFollowUp(t.tmpl, t.x, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode() != fasthttp.StatusOK || !bytes.HasPrefix(resp.Header.ContentType(), eventStream) {
		status := resp.StatusCode()
		_, _ = readAll(resp)
		fasthttp.ReleaseResponse(resp)
		return nil, fmt.Errorf("proxy: follow-up answered %d, not an event stream", status)
	}
	return resp, nil
}

// spliceStream feeds one upstream stream through the splicer, writing what
// it returns (sent before the upstream is read again, and at the end). It
// reports whether the client went away and the upstream's error, and closes
// the upstream body.
func (s *Server) spliceStream(w io.Writer, x *exchange, upResp *fasthttp.Response, sp rewrite.StreamSplicer) (clientGone bool, upErr error) {
	body := s.openUpstreamBody(upResp, w)
	defer body.close()
	r := rewrite.NewReader(body)
	for {
		ev, err := r.Next()
		if len(ev.Raw) > 0 && !sseEventEnded(ev.Raw) {
			ev.Raw = nil // cut inside this event: dropped (forwardEvents)
		}
		if len(ev.Raw) > 0 {
			if !x.crlf && bytes.HasSuffix(ev.Raw, crlf) {
				x.crlf = true
			}
			out, ferr := sp.Feed(ev)
			if ferr != nil {
				return false, ferr
			}
			// Flushed by the next upstream read (streamWriter).
			if len(out) > 0 {
				if _, err := w.Write(out); err != nil {
					body.abort()
					return true, nil
				}
			}
		}
		if err == io.EOF {
			return !flush(w), nil
		}
		if err != nil && (clientLeft(err) || writeFailed(w)) {
			body.abort()
			return true, nil
		}
		if err != nil {
			return false, body.cause(err)
		}
	}
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
