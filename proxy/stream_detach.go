package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"sync"
	"syscall"

	"github.com/valyala/fasthttp"
)

// A detached stream is a streamed reply served on a goroutine of its own,
// over the client connection taken from fasthttp (a hijack), instead of on
// fasthttp's connection goroutine.
//
// Served by fasthttp, an open stream keeps, for its whole life, everything
// fasthttp gave the request: the connection goroutine with the stack its
// deepest request reached, the 4 KB write buffer, and the request context
// with its header buffers. Streams sit idle for minutes (a model thinking,
// an agent's tool call), by the thousand. Detached, the stream keeps only
// its own goroutine (whose stack never held a request's parse), the
// upstream's reader and the exchange: fasthttp's goroutine, buffer and
// context go back to serve other connections as soon as the head is out.
//
// The stream writes the head fasthttp would have written (the response
// header as the handler left it, chunked) in front of its first chunk, each
// flush of its writer as one chunk, straight to the socket (one write per
// chunk, as before), then the last chunk and the trailer section. When the reply is done and the
// connection may be kept, the connection goes back to fasthttp
// (Server.ServeConn) for its next request, on the stream's goroutine; it is
// closed when the client asked so, the client left, or the server is
// shutting down. The disconnect watcher keeps watching the client through
// the hijack (detach), so an idle stream whose client left is still cut at
// once, and then moves the registration to the connection fasthttp serves
// next (rekey).
//
// HTTP/1.0 clients (no chunked framing), HEAD requests and replies that
// carry no body stay on fasthttp's path (streamBody.WriteTo), which frames
// and flushes the same bytes; so does every stream with
// limits.detach_streams off.

// detachedStreams tracks, for Shutdown, the open detached streams'
// connections (fasthttp no longer counts them) and the connections handed
// back to fasthttp that have not begun a request yet (fasthttp's Shutdown
// takes a connection it did not accept for one just opened, and leaves it
// 5 s to send a request before it closes it).
type detachedStreams struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	drained chan struct{} // closed when the last one ends; nil: nobody waits
	fresh   map[net.Conn]struct{}
}

// resumed notes c, handed back to fasthttp, as waiting for its next request.
func (d *detachedStreams) resumed(c net.Conn) {
	d.mu.Lock()
	if d.fresh == nil {
		d.fresh = map[net.Conn]struct{}{}
	}
	d.fresh[c] = struct{}{}
	d.mu.Unlock()
}

// connState follows a resumed connection until fasthttp reads a request
// from it, or it ends (the server's ConnState hook, for every connection).
func (d *detachedStreams) connState(c net.Conn) {
	if _, ok := c.(*resumedConn); !ok {
		return
	}
	d.mu.Lock()
	delete(d.fresh, c)
	d.mu.Unlock()
}

// closeFresh closes the resumed connections still waiting for a request
// (Shutdown: fasthttp closes the idle connections it accepted itself).
func (d *detachedStreams) closeFresh() {
	d.mu.Lock()
	for c := range d.fresh {
		_ = c.Close()
		delete(d.fresh, c)
	}
	d.mu.Unlock()
}

func (d *detachedStreams) add(c net.Conn) {
	d.mu.Lock()
	if d.conns == nil {
		d.conns = map[net.Conn]struct{}{}
	}
	d.conns[c] = struct{}{}
	d.mu.Unlock()
}

func (d *detachedStreams) done(c net.Conn) {
	d.mu.Lock()
	delete(d.conns, c)
	if len(d.conns) == 0 && d.drained != nil {
		close(d.drained)
		d.drained = nil
	}
	d.mu.Unlock()
}

// wait returns once no detached stream is open, or ctx's error.
func (d *detachedStreams) wait(ctx context.Context) error {
	d.mu.Lock()
	if len(d.conns) == 0 {
		d.mu.Unlock()
		return nil
	}
	if d.drained == nil {
		d.drained = make(chan struct{})
	}
	ch := d.drained
	d.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeAll closes the open detached streams' client connections (their
// writers then end at their next write) and returns how many.
func (d *detachedStreams) closeAll() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	for c := range d.conns {
		_ = c.Close()
	}
	return len(d.conns)
}

var errNoSocket = errors.New("proxy: the client connection has no socket")

// sendStream makes sb the reply's body: a detached stream when the request
// allows it, otherwise fasthttp's chunked body with the overhead trailer.
// x is the exchange the stream's writer owns (its own time goes in the
// trailer).
func (s *Server) sendStream(ctx *fasthttp.RequestCtx, sb *streamBody, x *exchange) {
	if !s.cfg.Limits.DetachStreams || !canDetach(ctx) {
		ctx.SetBodyStream(sb.withTrailer(overheadTrailer(ctx, x)), -1)
		return
	}
	trailer := declareOverheadTrailer(ctx)
	ctx.Response.Header.SetContentLength(-1)
	conn := ctx.Conn()
	s.watcher.detach(conn)
	s.detached.add(conn)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		// fasthttp has decided the response header (Connection: close
		// when the client asked, or the server is shutting down); the
		// context goes back to fasthttp once this returns.
		d := &detachedStream{s: s, conn: conn, c: c, sb: sb, x: x, trailer: trailer,
			keep: !ctx.Response.Header.ConnectionClose(), head: ctx.Response.Header.AppendBytes(nil)}
		// The turn a stream runs may read the request body until it
		// ends (a continuation appends to it): the stream owns it now.
		if x.feed.turn != nil {
			d.body = takeRequestBody(ctx)
		}
		// Bytes fasthttp read past the request (a pipelined request) are
		// in its reader, which reads through the request context: they
		// are copied out now, while the context is still fasthttp's.
		var known bool
		if d.pending, known = hijackPending(c); !known {
			d.keep = false // cannot tell what fasthttp read: the connection ends with the stream
		} else if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			// Write to the socket itself: the hijacked connection holds
			// fasthttp's 16 KB read buffer (the server streams request
			// bodies, so it keeps it through the request), whose bytes
			// past the request are copied in d.pending.
			d.c = u.UnsafeConn()
		}
		go d.run()
	})
}

// canDetach reports whether ctx's reply can be a detached stream: an
// HTTP/1.1 request other than HEAD, served on a connection (not a bare
// context), whose reply status carries a body.
func canDetach(ctx *fasthttp.RequestCtx) bool {
	st := ctx.Response.StatusCode()
	return ctx.Conn() != nil && ctx.Request.Header.IsHTTP11() && !ctx.IsHead() && st >= 200 && !noBody(st)
}

// detachedStream is one detached stream: conn is the client connection as
// the handler saw it (the watcher's key, and what the connection reads from
// once handed back), c the hijacked one, which the stream writes to and
// closes.
type detachedStream struct {
	s       *Server
	conn, c net.Conn
	sb      *streamBody
	x       *exchange
	head    []byte
	pending []byte      // bytes fasthttp read past the request (hijackPending)
	body    *pooledBody // the request's body, released when the stream ends
	trailer bool        // the client accepts trailers: the overhead goes in one
	keep    bool        // the connection may serve another request
}

func (d *detachedStream) run() {
	if !d.sb.claim() {
		d.releaseBody()
		d.close()
		return
	}
	cw := &chunkWriter{c: d.c, head: d.head} // the head leaves with the first chunk
	d.head = nil
	sw := newStreamWriter(cw)
	d.sb.run(sw)
	d.releaseBody()
	if sw.Flush() != nil || cw.end(d.trailerValue()) != nil || !d.keep || d.s.stopping.Load() {
		d.close()
		return
	}
	rc := resume(d.conn, d.pending)
	d.s.watcher.rekey(d.conn, rc)
	d.s.detached.resumed(rc)
	d.s.detached.done(d.conn)
	// The connection is fasthttp's again, counted and closed by its
	// Shutdown like any other (once it began a request; until then
	// Shutdown closes it through closeFresh).
	_ = d.s.srv.ServeConn(rc)
}

// releaseBody gives the request body back once the stream no longer reads it.
func (d *detachedStream) releaseBody() {
	if d.body != nil {
		releaseBodyBuffer(d.body)
		d.body = nil
	}
}

// trailerValue is the overhead trailer's value; nil when the client takes
// no trailers.
func (d *detachedStream) trailerValue() []byte {
	if !d.trailer {
		return nil
	}
	return appendOverhead(nil, d.x.ownTime())
}

func (d *detachedStream) close() {
	d.s.watcher.drop(d.conn)
	_ = d.c.Close()
	d.s.detached.done(d.conn)
}

// chunkWriter frames each write as one HTTP/1.1 chunk, written to c in one
// write (streamWriter coalesces a stream's events into writes of up to
// coalesceSize; a larger event is one write of its own). head, the
// response head, goes out in front of the first chunk (or of the last
// chunk when nothing is written), in the same write, as fasthttp sends it.
type chunkWriter struct {
	c    net.Conn
	head []byte
}

// chunkBufSize fits a coalesced chunk with its framing, and a response
// head in front of the first one.
const chunkBufSize = coalesceSize + 2<<10

var chunkBufPool = sync.Pool{New: func() any { b := make([]byte, 0, chunkBufSize); return &b }}

func (w *chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // a zero-size chunk would end the body
	}
	bp := chunkBufPool.Get().(*[]byte)
	b := append((*bp)[:0], w.head...)
	w.head = nil
	b = strconv.AppendUint(b, uint64(len(p)), 16)
	b = append(append(append(b, '\r', '\n'), p...), '\r', '\n')
	_, err := w.c.Write(b)
	if cap(b) <= chunkBufSize {
		*bp = b[:0]
	}
	chunkBufPool.Put(bp)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// end writes the last chunk and the trailer section, with the overhead
// trailer when value is not nil.
func (w *chunkWriter) end(value []byte) error {
	b := make([]byte, 0, len(w.head)+64)
	b = append(append(b, w.head...), "0\r\n"...)
	w.head = nil
	if value != nil {
		b = append(append(append(append(b, headerOverhead...), ": "...), value...), '\r', '\n')
	}
	_, err := w.c.Write(append(b, '\r', '\n'))
	return err
}

// resumedConn is a detached stream's connection handed back to fasthttp:
// the client connection Conn, read after pending (bytes fasthttp had read
// past the request: a pipelined request); raw is the client's socket
// (SyscallConn, for the disconnect watcher).
type resumedConn struct {
	net.Conn
	raw     net.Conn
	pending []byte
}

// resume is conn, the connection a detached stream served (a client
// connection, or one resumed before), made ready to go back to fasthttp,
// which reads pending (what it had read past the request) first. A
// connection that serves stream after stream (an agent's, turn after turn)
// stays one wrapper deep over its socket, never a wrapper per stream.
func resume(conn net.Conn, pending []byte) *resumedConn {
	if rc, ok := conn.(*resumedConn); ok {
		if len(rc.pending) == 0 {
			rc.pending = pending
			return rc
		}
		// rc still holds bytes fasthttp has not read (a pipeline longer
		// than its buffer): they come after pending.
		return &resumedConn{Conn: rc, raw: rc.raw, pending: pending}
	}
	return &resumedConn{Conn: conn, raw: conn, pending: pending}
}

// Read reads the pending bytes first, then from the connection.
func (c *resumedConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

var bufioReaderType = reflect.TypeFor[*bufio.Reader]()

// hijackPending returns a copy of what c, a connection fasthttp hijacked,
// had buffered past the request (nil: nothing; c reads from the socket),
// and whether it could tell. fasthttp keeps that reader unexported
// (hijackConn.r, a *bufio.Reader when it holds bytes);
// TestHijackPendingSeesFasthttpReader pins it.
func hijackPending(c net.Conn) ([]byte, bool) {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	r := v.Elem().FieldByName("r")
	if !r.IsValid() || r.Kind() != reflect.Interface || r.IsNil() {
		return nil, false
	}
	if r.Elem().Type() != bufioReaderType {
		return nil, true
	}
	br := (*bufio.Reader)(r.Elem().UnsafePointer())
	b, err := br.Peek(br.Buffered())
	if err != nil {
		return nil, false
	}
	return bytes.Clone(b), true
}

// SyscallConn is the socket's, when the client connection has one.
func (c *resumedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.raw.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoSocket
}
