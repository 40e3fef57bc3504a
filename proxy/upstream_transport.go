package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// upstreamTransport is the upstream clients' exchange (fasthttp's
// RoundTripper): fasthttp's own (write the request, read the response
// head with the client's read buffer, then stream the body), except that
// the body does not keep that buffer. fasthttp's body stream reads through
// the connection's read buffer (upstreamReadBuffer, 8 KB) for the body's
// whole life, so an open stream, mostly waiting for the model's next
// event, would hold it for minutes. Here the body reads what the buffer
// already holds after the head, gives the buffer back to the client's pool
// as soon as it is drained, and then reads the socket itself
// (bodySource): on a plain TCP connection it waits for data without a
// buffer and takes a pooled one only for the bytes that arrived
// (idleConn.readPooled), so an idle stream holds no read buffer at all.
//
// Everything else is fasthttp's behaviour with the settings newUpstream
// uses: no retries, no MaxConnDuration, timeout as the silence limit of
// every read and write (idleConn), the connection back to the pool once a
// body was read to its end and closed, closed otherwise.
type upstreamTransport struct {
	timeout time.Duration // limits.upstream_timeout; 0: none
}

// maxInterimResponses bounds the 1xx responses skipped before the final
// one (fasthttp's bound).
const maxInterimResponses = 8

var errTooManyInterim = errors.New("proxy: upstream sent too many 1xx responses")

// RoundTrip implements fasthttp.RoundTripper.
func (t *upstreamTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (retry bool, err error) {
	var deadline time.Time
	if t.timeout > 0 {
		deadline = time.Now().Add(t.timeout)
	}
	cc, err := hc.AcquireConn(t.timeout, req.ConnectionClose())
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	resp.ParseNetConn(conn)
	if err := conn.SetWriteDeadline(deadline); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	bw := hc.AcquireWriter(conn)
	gb, _ := req.BodyStream().(*watchedBody)
	if gb != nil {
		gb.gather.conn = conn
		bw.Reset(&gb.gather) // upstream_gather.go
	}
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if gb != nil {
		if err == nil {
			err = gb.gather.flush()
		}
		gb.gather = gatherWriter{}
		bw.Reset(conn)
	}
	hc.ReleaseWriter(bw)
	if err != nil {
		hc.CloseConn(cc)
		if isTimeout(err) {
			err = fasthttp.ErrTimeout
		}
		return true, err
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	if req.Header.IsHead() {
		resp.SkipBody = true
	}
	br := hc.AcquireReader(conn)
	if err := readFinalHead(resp, br); err != nil {
		hc.ReleaseReader(br)
		hc.CloseConn(cc)
		return true, err
	}
	closeConn := req.ConnectionClose() || resp.ConnectionClose() || resp.StatusCode() == fasthttp.StatusSwitchingProtocols
	// release hands the connection back to the pool (keep) or closes it;
	// fasthttp's connection type is unexported, so only a closure over cc
	// can name it.
	release := func(keep bool) {
		if keep {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc)
		}
	}
	if resp.SkipBody || noBody(resp.StatusCode()) {
		hc.ReleaseReader(br)
		release(!closeConn)
		return false, nil
	}
	if !resp.StreamBody {
		// Whole: only fasthttp's buffering helpers (HostClient.Get, Post)
		// ask for that; shepherd itself always streams (DoTimeout with
		// StreamResponseBody).
		err := resp.ReadBody(br, hc.MaxResponseBodySize)
		if err == nil && resp.Header.ContentLength() == -1 {
			err = resp.Header.ReadTrailer(br)
		}
		hc.ReleaseReader(br)
		release(!closeConn && err == nil)
		return err != nil, err
	}
	size := resp.Header.ContentLength()
	resp.SetBodyStream(newConnBody(hc, conn, br, size, !closeConn, release), size) // size as parsed: the header is unchanged
	return false, nil
}

// readFinalHead reads the response head, skipping interim 1xx responses
// (101 is final).
func readFinalHead(resp *fasthttp.Response, br *bufio.Reader) error {
	for n := 0; ; n++ {
		if err := resp.Header.Read(br); err != nil {
			return err
		}
		code := resp.StatusCode()
		if code < 100 || code > 199 || code == fasthttp.StatusSwitchingProtocols {
			return nil
		}
		if n >= maxInterimResponses {
			return errTooManyInterim
		}
	}
}

// noBody reports a status whose response has no body.
func noBody(code int) bool {
	return (code >= 100 && code < 200) || code == fasthttp.StatusNoContent || code == fasthttp.StatusNotModified
}

// isTimeout reports an error that is a timeout (net.Error's Timeout, which
// os.ErrDeadlineExceeded and fasthttp.ErrTimeout have).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// connBody is a response body read from its connection (see
// upstreamTransport): framed by Content-Length, chunked, or read to the
// connection's close. It is fasthttp's streamed body contract: Read until
// io.EOF, then CloseWithError, which may also be called while a Read is
// in flight (the connection is closed to end that Read).
type connBody struct {
	conn    net.Conn
	release func(keep bool) // the connection back to the pool, or closed
	src     bodySource
	body    io.Reader // src decoded: limited, chunked, or as is
	chunk   *bufio.Reader
	// keepAlive: the connection may serve another request once the body
	// was read to its end.
	keepAlive bool
	fullyRead bool

	readLock  sync.Mutex
	closed    atomic.Bool
	closeOnce sync.Once
}

// chunkLineBuffer bounds a chunk-size line (with extensions) and a trailer
// line of a chunked body; it is held by an open chunked stream.
const chunkLineBuffer = 512

func newConnBody(hc *fasthttp.HostClient, conn net.Conn, br *bufio.Reader, size int, keepAlive bool, release func(keep bool)) *connBody {
	s := &connBody{conn: conn, release: release, keepAlive: keepAlive && size != -2}
	s.src = bodySource{hc: hc, br: br, conn: conn}
	if ic, ok := conn.(*idleConn); ok && ic.raw != nil {
		s.src.lazy = ic
	}
	switch {
	case size >= 0:
		s.body = &io.LimitedReader{R: &s.src, N: int64(size)}
	case size == -1:
		s.chunk = bufio.NewReaderSize(&s.src, chunkLineBuffer)
		s.body = httputil.NewChunkedReader(s.chunk)
	default: // -2: until the connection closes
		s.body = &s.src
	}
	return s
}

// Read implements io.Reader.
func (s *connBody) Read(p []byte) (int, error) {
	if s.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	s.readLock.Lock()
	defer s.readLock.Unlock()
	if s.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	if s.fullyRead {
		return 0, io.EOF
	}
	n, err := s.body.Read(p)
	if lr, ok := s.body.(*io.LimitedReader); ok {
		switch {
		case err == io.EOF && lr.N > 0:
			err = io.ErrUnexpectedEOF // the connection closed before Content-Length
		case err == nil && lr.N == 0:
			s.fullyRead = true // complete, even if no Read comes to see io.EOF
		}
	}
	if err == io.EOF && s.chunk != nil {
		err = skipTrailer(s.chunk)
	}
	if err == io.EOF {
		s.fullyRead = true
	}
	return n, err
}

// skipTrailer reads a chunked body's trailer section up to its end (the
// empty line) and drops it; io.EOF when it ended well.
func skipTrailer(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return errors.New("proxy: upstream chunked trailer line too long")
		case err == io.EOF:
			return io.ErrUnexpectedEOF
		case err != nil:
			return err
		}
		if len(line) == 2 && line[0] == '\r' || len(line) == 1 {
			return io.EOF
		}
	}
}

// CloseWithError implements fasthttp.ReadCloserWithError: it ends the
// body, interrupting a Read in flight, and gives the connection back to
// the pool when the body was read to its end with nothing left over, or
// closes it.
func (s *connBody) CloseWithError(err error) error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		locked := s.readLock.TryLock()
		clean := err == nil && locked && s.fullyRead && s.keepAlive && s.src.drained() &&
			(s.chunk == nil || s.chunk.Buffered() == 0)
		if !clean {
			_ = s.conn.Close() // ends a Read in flight
		}
		if !locked {
			s.readLock.Lock()
		}
		defer s.readLock.Unlock()
		s.src.release()
		s.release(clean)
	})
	return nil
}

// bodySource is a response body's bytes as they come: first those the
// client's read buffer (br) holds after the head, then the socket's. br
// goes back to the client's pool once drained; the socket is read into a
// pooled read-ahead buffer that goes back once drained too, so that a
// source waiting for its next bytes holds no buffer. A caller's buffer of
// at least readAheadSize is read into directly.
type bodySource struct {
	hc   *fasthttp.HostClient
	br   *bufio.Reader // nil once given back
	conn net.Conn
	lazy *idleConn // the plain TCP connection, when conn is one: reads wait for data first

	ahead *[]byte // pending socket bytes (ahead[r:w]); nil when none
	r, w  int
}

// readAheadSize is the read-ahead buffer's size: what one socket read may
// take when the caller asks for less (an SSE reader's small window).
const readAheadSize = 8 << 10

var readAheadPool = sync.Pool{New: func() any { b := make([]byte, readAheadSize); return &b }}

// Read implements io.Reader.
func (s *bodySource) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.br != nil {
		var n int
		if s.br.Buffered() > 0 {
			n, _ = s.br.Read(p) // served from the buffer: no socket read
		}
		if s.br.Buffered() == 0 {
			s.hc.ReleaseReader(s.br) // drained: back before anything waits
			s.br = nil
		}
		if n > 0 {
			return n, nil
		}
	}
	if s.ahead != nil {
		n := copy(p, (*s.ahead)[s.r:s.w])
		s.r += n
		if s.r == s.w {
			s.putAhead()
		}
		return n, nil
	}
	if s.lazy == nil || len(p) >= readAheadSize {
		return s.conn.Read(p)
	}
	buf, n, err := s.lazy.readPooled()
	if n == 0 {
		return 0, err
	}
	c := copy(p, (*buf)[:n])
	if c < n {
		s.ahead, s.r, s.w = buf, c, n
	} else {
		readAheadPool.Put(buf)
	}
	return c, nil
}

func (s *bodySource) putAhead() {
	readAheadPool.Put(s.ahead)
	s.ahead, s.r, s.w = nil, 0, 0
}

// drained reports that no byte read from the connection is left unread.
func (s *bodySource) drained() bool {
	return (s.br == nil || s.br.Buffered() == 0) && s.ahead == nil
}

// release gives the buffers back.
func (s *bodySource) release() {
	if s.br != nil {
		s.hc.ReleaseReader(s.br)
		s.br = nil
	}
	if s.ahead != nil {
		s.putAhead()
	}
}
