package proxy

import (
	"io"
	"sync"

	"github.com/valyala/fasthttp"
)

// Phases of a request in which its client can be found gone
// (shepherd_client_disconnects_total's phase label).
const (
	// phaseWaitingUpstream: the request is being sent upstream or its
	// response headers are awaited.
	phaseWaitingUpstream = "waiting_upstream"
	// phaseReadingReply: a non-streamed reply's body is being read.
	phaseReadingReply = "reading_reply"
	// phaseStreaming: a streamed reply is being forwarded.
	phaseStreaming = "streaming"
)

// clientWatch follows one client connection while its request waits on the
// upstream, so that a client that goes away is noticed at once instead of
// at shepherd's next write (which, with a silent upstream, may be minutes
// away, and never comes for a reply that is not streamed). The server's
// disconnectWatcher (one for all connections, no goroutine per request)
// reports the peer's close; the watch then cancels what the request has
// upstream: it closes the upstream connection of a request still waiting
// for its response headers, or the body stream of a reply being read, and
// counts the disconnect once. The watcher registers a connection once, for
// all its requests; a watch is attached to that registration for one
// request, from watchClient to stop.
//
// A close is the peer shutting the connection (FIN or RST). Bytes of a
// pipelined next request are not a close; a peer that half-closes after
// its request is taken as gone, as net/http does.
//
// All methods are safe on a nil watch (no watching: the platform has no
// watcher, or the connection is not a socket).
type clientWatch struct {
	d     *disconnectWatcher
	route string
	wc    *watchedConn // the connection's entry in the watcher

	mu      sync.Mutex
	phase   string
	after   string // the phase a follow-up's reply continues in
	gone    bool   // the client went away (counted once)
	stopped bool
	conn    *idleConn                    // upstream connection while the headers are awaited
	body    fasthttp.ReadCloserWithError // upstream body being read
}

// watchClient starts watching ctx's connection for the request of route;
// nil when it cannot be watched. A connection whose client already left
// gives a watch that has fired (left is true, the disconnect counted).
func (s *Server) watchClient(ctx *fasthttp.RequestCtx, route string) *clientWatch {
	if s.watcher == nil {
		return nil
	}
	return s.watcher.watch(ctx.Conn(), route)
}

// left reports whether the client went away.
func (w *clientWatch) left() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gone
}

// sending binds the upstream connection c (the one the request is written
// to) to the watch until its response headers are in; false means the
// client is already gone and the request must not be sent.
func (w *clientWatch) sending(c *idleConn) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone || w.stopped {
		return !w.gone
	}
	if w.phase != phaseWaitingUpstream {
		w.after = w.phase
	}
	w.conn, w.phase = c, phaseWaitingUpstream
	return true
}

// received records that resp's headers are in (or that the request failed:
// resp is then nil): the connection is no longer the watch's to close;
// resp's body stream, if any, is, in phase ("": the phase the request was
// sent in, for a follow-up).
func (w *clientWatch) received(resp *fasthttp.Response, phase string) {
	if w == nil {
		return
	}
	var body fasthttp.ReadCloserWithError
	if resp != nil {
		body, _ = resp.BodyStream().(fasthttp.ReadCloserWithError)
	}
	w.mu.Lock()
	if phase == "" {
		phase = w.after
		if phase == "" {
			phase = phaseReadingReply
		}
	}
	w.conn, w.body, w.phase = nil, body, phase
	w.mu.Unlock()
}

// reading changes the phase of the reply body being read.
func (w *clientWatch) reading(phase string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.phase = phase
	w.mu.Unlock()
}

// clientGone records a client found gone by a failed write (phase); true
// the first time, when the caller counts it.
func (w *clientWatch) clientGone() bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return false
	}
	w.gone = true
	return true
}

// fire is the watcher's report that the client closed its connection: it
// cancels the upstream side and counts the disconnect.
func (w *clientWatch) fire() {
	w.mu.Lock()
	if w.gone || w.stopped {
		w.mu.Unlock()
		return
	}
	w.gone = true
	phase, body := w.phase, w.body
	if w.conn != nil {
		// Closed under the lock: once received has run, the connection
		// may serve another request.
		_ = w.conn.Conn.Close()
	}
	w.mu.Unlock()
	if body != nil {
		// A stream body closes once; closing it again after it was
		// released does nothing.
		_ = body.CloseWithError(errClientGone)
	}
	w.d.count(w.route, phase)
}

// stop ends the watch: the request is done with its client connection,
// which stays registered with the watcher for its next request.
func (w *clientWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped, w.conn, w.body = true, nil, nil
	w.mu.Unlock()
	w.d.unwatch(w)
}

// watchedBody is an upstream request body that, once fasthttp has picked
// the connection it goes out on, binds that connection to the client's
// watch: fasthttp writes it on the goroutine that sends the request, after
// it set the response's local address (connOf), and offers no other way to
// cancel a request in flight.
type watchedBody struct {
	b    []byte
	off  int
	resp *fasthttp.Response
	w    *clientWatch
	// gather, when upstreamTransport writes the request through it, takes
	// the body to write it with the head in one system call
	// (upstream_gather.go).
	gather gatherWriter
}

// setWatchedBody makes body req's body, bound to w through resp, and
// returns it (nil for an empty body).
func setWatchedBody(req *fasthttp.Request, resp *fasthttp.Response, body []byte, w *clientWatch) *watchedBody {
	if len(body) == 0 {
		return nil // an empty body would gain a Content-Length header
	}
	b := &watchedBody{b: body, resp: resp, w: w}
	req.SetBodyStream(b, len(body))
	return b
}

// SupportsBodyWriteTo lets fasthttp write the body through WriteTo.
func (b *watchedBody) SupportsBodyWriteTo() bool { return true }

// WriteTo binds the connection and writes the body.
func (b *watchedBody) WriteTo(w io.Writer) (int64, error) {
	if !b.bind() {
		return 0, errClientGone
	}
	if b.gather.conn != nil && b.off == 0 {
		// Queued: written after the head, on the bufio.Writer's flush
		// (with b.gather.copies, when set).
		b.gather.body = b.b
		b.off = len(b.b)
		return int64(len(b.b)), nil
	}
	n, err := w.Write(b.b[b.off:])
	b.off += n
	return int64(n), err
}

// Read serves the body to a consumer that reads it (fasthttp uses WriteTo).
func (b *watchedBody) Read(p []byte) (int, error) {
	if b.off == 0 && !b.bind() {
		return 0, errClientGone
	}
	if b.off >= len(b.b) {
		return 0, io.EOF
	}
	n := copy(p, b.b[b.off:])
	b.off += n
	return n, nil
}

func (b *watchedBody) bind() bool {
	c := connOf(b.resp)
	if c == nil {
		return !b.w.left()
	}
	return b.w.sending(c)
}
