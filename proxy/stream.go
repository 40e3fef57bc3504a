package proxy

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// streamEvents forwards an SSE reply event by event: each event's exact bytes
// are written as soon as the event is complete and sent before shepherd
// reads the upstream again (streamWriter), so the client never waits on
// shepherd for more than the rest of the event in flight. The writer runs
// after handle returns, on the connection's goroutine (streamBody), and
// owns x from then on.
func (s *Server) streamEvents(ctx *fasthttp.RequestCtx, x *exchange) {
	xs := passThroughExchange(x)
	releaseRequestBody(ctx)
	s.sendStream(ctx, newStreamBody(func(w io.Writer) {
		s.pipe(w, &xs, func(bs io.Reader, w io.Writer) (clientGone bool, upErr error) {
			// A parsed route's stream must end with its API's terminal
			// event; fasthttp reports a connection cut between two chunks
			// as a clean EOF, so the protocol is the only reliable witness.
			return forwardEvents(rewrite.NewReader(bs), w, xs.route.api, xs.codec != nil, &xs.crlf)
		}, xs.sseErrorEvent)
	}), &xs)
}

// forwardEvents is the pass-through SSE loop: it writes each event's exact
// bytes as soon as the event is complete (a streamWriter sends them before
// the upstream is read again), notes whether the upstream frames its events
// with CRLF, and, when mustTerminate is set, reports a stream that ends
// without api's terminal event as cut. It allocates nothing per event
// (TestForwardEventsAllocs, TestStreamWriterForwardingAllocs).
func forwardEvents(r *rewrite.Reader, w io.Writer, api *rewrite.Descriptor, mustTerminate bool, crlfSeen *bool) (clientGone bool, upErr error) {
	terminated := !mustTerminate
	for {
		ev, err := r.Next()
		if len(ev.Raw) > 0 && mustTerminate && !sseEventEnded(ev.Raw) {
			// The stream broke inside this event (its blank line never
			// came): its bytes are dropped so that the error event that
			// follows starts on a line of its own.
			ev.Raw = nil
		}
		if len(ev.Raw) > 0 {
			if !terminated && rewrite.IsTerminalEvent(api, &ev) {
				terminated = true
			}
			if !*crlfSeen && (bytes.HasSuffix(ev.Raw, crlf) || bytes.HasSuffix(ev.Raw, crlfCR)) {
				*crlfSeen = true
			}
			// Not flushed here: the upstream connection flushes before it
			// reads (streamWriter), so events that arrived together leave
			// together and none waits for the upstream.
			if _, err := w.Write(ev.Raw); err != nil {
				return true, nil
			}
			if bytes.HasSuffix(ev.Raw, crlfCR) {
				// Cut between the CR and LF of a CRLF blank line: the
				// event is whole, and its LF keeps the framing CRLF for
				// what follows.
				if _, err := w.Write(lf); err != nil {
					return true, nil
				}
			}
		}
		if err == io.EOF {
			if !terminated {
				return false, io.ErrUnexpectedEOF
			}
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// streamChunks forwards a streamed body that is not SSE (Gemini's
// JSON-array stream, unknown pass-through streams) as it arrives, sending
// what was read before every read of the upstream. Gemini's array is sent
// element by element (jsonArrayStream), so a stream that breaks is closed
// with an error element and the body still parses as a JSON array.
func (s *Server) streamChunks(ctx *fasthttp.RequestCtx, x *exchange) {
	xs := passThroughExchange(x)
	releaseRequestBody(ctx)
	var arr *jsonArrayStream
	if xs.codec != nil {
		arr = &jsonArrayStream{}
	}
	s.sendStream(ctx, newStreamBody(func(w io.Writer) {
		s.pipe(w, &xs, func(bs io.Reader, w io.Writer) (bool, error) {
			return copyChunks(bs, w, arr)
		}, func(status int, msg string) []byte {
			if arr == nil {
				return nil
			}
			return arr.errorTail(xs.codec.ErrorBody(status, msg))
		})
	}), &xs)
}

// copyChunks copies bs to w one read at a time. A read that waits for the
// upstream (an idle stream) holds only a small buffer: the large pooled one
// is taken while reads keep filling the buffer and given back as soon as one
// does not. With arr, the body is followed as a JSON array: only whole
// elements are sent (the bytes of one still arriving are held), and the
// stream must end with the array's closing bracket or it counts as cut.
func copyChunks(bs io.Reader, w io.Writer, arr *jsonArrayStream) (clientGone bool, upErr error) {
	var small [smallChunk]byte
	var big *[]byte
	defer func() {
		if big != nil {
			chunkPool.Put(big)
		}
	}()
	buf := small[:]
	var held []byte // an array element still arriving
	for {
		n, err := bs.Read(buf)
		if n > 0 {
			out := buf[:n]
			if arr != nil {
				c := arr.scan(out)
				switch {
				case len(held) == 0:
					held = append(held, out[c:]...)
					out = out[:c]
				case c == 0:
					held = append(held, out...)
					out = nil
				default:
					held = append(held, out[:c]...)
					if _, err := w.Write(held); err != nil {
						return true, nil
					}
					held = append(held[:0], out[c:]...)
					out = nil
				}
				if len(held) == 0 && cap(held) > smallChunk {
					held = nil // an idle stream keeps no large buffer
				}
			}
			if len(out) > 0 {
				if _, err := w.Write(out); err != nil {
					return true, nil
				}
			}
		}
		if err == io.EOF {
			if arr != nil && !arr.complete() {
				return false, io.ErrUnexpectedEOF
			}
			return false, nil
		}
		if err != nil {
			return false, err
		}
		switch {
		case n == len(buf) && big == nil:
			big = chunkPool.Get().(*[]byte)
			buf = *big
		case n < len(buf) && big != nil:
			chunkPool.Put(big)
			big = nil
			buf = small[:]
		}
	}
}

// smallChunk is the read buffer of a chunked stream while its data trickles.
const smallChunk = 2 << 10

var (
	crlfCR = []byte("\r\n\r")
	crlf   = []byte("\r\n")
	lf     = []byte("\n")
)

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// pipe runs copyFn over the upstream body, and cleans up: a client that
// went away cancels the upstream request (its connection is closed); an
// upstream that broke mid-stream (cut, silent past stream_idle_timeout,
// cut by Shutdown) ends the client's stream with errTail: the stream
// syntax's own error form (an SSE error event, the error element closing a
// JSON array), or nothing when it returns nil.
func (s *Server) pipe(w io.Writer, x *exchange, copyFn func(io.Reader, io.Writer) (bool, error), errTail func(status int, msg string) []byte) {
	start := time.Now()
	s.metrics.streamsOpen.Inc()
	defer s.metrics.streamsOpen.Dec()
	defer fasthttp.ReleaseResponse(x.upResp)
	body := s.openUpstreamBody(x.upResp, w)
	defer body.close()

	defer x.watch.stop()

	clientGone, upErr := copyFn(body, w)
	if upErr != nil && (clientLeft(upErr) || writeFailed(w) || x.watch.left()) {
		clientGone, upErr = true, nil
	}
	if !clientGone && !flush(w) {
		clientGone = true
	}
	switch {
	case clientGone:
		s.streamClientGone(x)
		body.abort()
		s.log.Debug("client left mid-stream; upstream request cancelled",
			zap.String("request_id", x.requestID), zap.String("route", x.route.name))
	case upErr != nil:
		s.endStreamWithError(w, x, body.cause(upErr), errTail)
	}
	s.metrics.streamDuration.WithLabelValues(x.route.name).Observe(time.Since(start).Seconds())
}

// streamClientGone counts a stream whose client left: in
// shepherd_client_aborts_total, and in shepherd_client_disconnects_total
// unless the watcher already counted it.
func (s *Server) streamClientGone(x *exchange) {
	s.metrics.clientAborts.WithLabelValues(x.route.name).Inc()
	if x.watch.clientGone() {
		s.metrics.disconnects.WithLabelValues(x.route.name, phaseStreaming).Inc()
	}
}

// upstreamBody is one upstream body a stream writer reads: registered so
// Shutdown can cut it, watched for silence, and closed (which releases or
// drops the upstream connection) when the writer is done. What the writer
// has pending for the client (streamWriter) is flushed before every read
// of the upstream connection (idleConn.Read), or, for a body that did not
// come through one, before every read of the body.
type upstreamBody struct {
	*idleWatch
	s      *Server
	resp   *fasthttp.Response
	closer fasthttp.ReadCloserWithError
	id     uint64
	out    flusher   // the client writer's pending bytes; nil: none to flush
	conn   *idleConn // flushes out before its reads; nil: Read flushes
}

// openUpstreamBody starts reading resp's body for a stream written to out.
// A body small enough to have been read with the headers is served from
// memory.
func (s *Server) openUpstreamBody(resp *fasthttp.Response, out io.Writer) *upstreamBody {
	bs := resp.BodyStream()
	if bs == nil {
		bs = bytes.NewReader(resp.Body())
	}
	closer, _ := bs.(fasthttp.ReadCloserWithError)
	b := &upstreamBody{s: s, resp: resp, closer: closer, id: s.streams.add(closer)}
	idle := s.cfg.Limits.StreamIdleTimeout
	if f, ok := out.(flusher); ok {
		b.out = f
		if c := connOf(resp); c != nil && closer != nil {
			b.conn = c
			c.stream.Store(b)
			if idle > 0 {
				// The connection's read deadline, re-armed before every
				// socket read, keeps the silence limit: no timer per
				// stream (idleConn.Read marks the stream fired).
				c.idle.Store(int64(idle))
				idle = 0
			}
		}
	}
	b.idleWatch = newIdleWatch(bs, closer, idle)
	return b
}

// Read reads the upstream body; see upstreamBody for the flushes.
func (b *upstreamBody) Read(p []byte) (int, error) {
	if b.out != nil && b.conn == nil {
		if err := b.out.Flush(); err != nil {
			return 0, clientWriteError{err}
		}
	}
	return b.idleWatch.Read(p)
}

// cause maps a read error to the proxy's classes: silence past
// stream_idle_timeout is a timeout, a stream Shutdown cut is a shutdown.
func (b *upstreamBody) cause(err error) error {
	switch {
	case b.s.streams.wasCut(b.id):
		return errShuttingDown
	case b.fired.Load():
		return errors.Join(errUpstreamTimeout, err)
	}
	return err
}

// abort closes the upstream connection because the client went away.
func (b *upstreamBody) abort() {
	if b.closer != nil {
		_ = b.closer.CloseWithError(errClientGone)
	}
}

func (b *upstreamBody) close() {
	if b.conn != nil {
		b.conn.stream.CompareAndSwap(b, nil)
	}
	b.stop()
	b.s.streams.remove(b.id)
	_ = b.resp.CloseBodyStream()
}

var (
	errClientGone = errors.New("proxy: client went away")
	errStreamIdle = errors.New("proxy: upstream stream idle too long")
)

// idleWatch cuts an upstream stream that stays silent longer than
// limits.stream_idle_timeout: every Read re-arms a timer whose expiry closes
// the body stream, which interrupts the Read in flight. A stream read
// through an idleConn has no timer (d is 0): the connection's read deadline
// does the same, and idleConn.Read sets fired when it expires.
type idleWatch struct {
	r     io.Reader
	d     time.Duration
	timer *time.Timer
	fired atomic.Bool
}

func newIdleWatch(r io.Reader, closer fasthttp.ReadCloserWithError, d time.Duration) *idleWatch {
	w := &idleWatch{r: r, d: d}
	if d > 0 && closer != nil {
		w.timer = time.AfterFunc(d, func() {
			w.fired.Store(true)
			_ = closer.CloseWithError(errStreamIdle)
		})
	}
	return w
}

func (w *idleWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if w.timer != nil && n > 0 {
		w.timer.Reset(w.d)
	}
	return n, err
}

func (w *idleWatch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// streamRegistry tracks open upstream streams so Shutdown can cut the ones
// still open when the grace period ends.
type streamRegistry struct {
	mu   sync.Mutex
	next uint64
	open map[uint64]fasthttp.ReadCloserWithError
	cut  map[uint64]bool
}

func (r *streamRegistry) add(c fasthttp.ReadCloserWithError) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = map[uint64]fasthttp.ReadCloserWithError{}
		r.cut = map[uint64]bool{}
	}
	r.next++
	r.open[r.next] = c
	return r.next
}

func (r *streamRegistry) remove(id uint64) {
	r.mu.Lock()
	delete(r.open, id)
	delete(r.cut, id)
	r.mu.Unlock()
}

func (r *streamRegistry) wasCut(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut[id]
}

// closeAll cuts every open stream and returns how many there were. Closing
// is safe while a Read is in flight: fasthttp's stream body interrupts it.
func (r *streamRegistry) closeAll() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.open {
		r.cut[id] = true
		if c != nil {
			_ = c.CloseWithError(errShuttingDown)
		}
	}
	return len(r.open)
}
