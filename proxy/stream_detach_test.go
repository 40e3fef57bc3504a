package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// hijackSeen is what hijackServer's handler saw of one request: the
// connection the handler saw, what fasthttp had read past the request, and
// the connection handed back to fasthttp.
type hijackSeen struct {
	conn    net.Conn
	pending []byte
	known   bool
	rc      *resumedConn
}

// hijackServer serves with fasthttp as shepherd configures it for
// detached streams: every request is hijacked, answered "ok" on a
// goroutine of its own once the hijack handler has returned (fasthttp has
// its request context back), and its connection handed back to fasthttp
// through resume, as a detached stream does.
func hijackServer(t *testing.T, seen chan<- hijackSeen) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var srv *fasthttp.Server
	srv = &fasthttp.Server{
		ReduceMemoryUsage: true,
		KeepHijackedConns: true,
		Logger:            quietLogger{}, // a client closing its connection is no error here
		Handler: func(ctx *fasthttp.RequestCtx) {
			conn := ctx.Conn()
			ctx.HijackSetNoResponse(true)
			ctx.Hijack(func(c net.Conn) {
				pending, known := hijackPending(c)
				go func() {
					time.Sleep(5 * time.Millisecond) // fasthttp has released the context
					_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
					rc := resume(conn, pending)
					seen <- hijackSeen{conn: conn, pending: pending, known: known, rc: rc}
					_ = srv.ServeConn(rc)
				}()
			})
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// dialHijackServer starts a hijackServer and connects to it.
func dialHijackServer(t *testing.T) (chan hijackSeen, net.Conn, *bufio.Reader) {
	t.Helper()
	seen := make(chan hijackSeen, 8)
	c, err := net.Dial("tcp", hijackServer(t, seen))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return seen, c, bufio.NewReader(c)
}

// quietLogger drops fasthttp's log lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func readOK(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "ok", string(b))
}

const getReq = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

// hijackPending sees what fasthttp read past a hijacked request: nothing
// for a lone request, the next request for a pipelined one, which is then
// served from the copy after fasthttp took back the context its reader
// lives in. It reads a field fasthttp keeps unexported: this test fails if
// fasthttp changes it.
func TestHijackPendingSeesFasthttpReader(t *testing.T) {
	seen, c, br := dialHijackServer(t)
	_, err := c.Write([]byte(getReq))
	require.NoError(t, err)
	readOK(t, br)
	s := <-seen
	require.True(t, s.known)
	require.Empty(t, s.pending, "a lone request: nothing read past it")

	// Three requests in one write: the next two are in fasthttp's buffer
	// when the first is hijacked, and must be served from the copy.
	_, err = c.Write([]byte(getReq + getReq + getReq))
	require.NoError(t, err)
	for i := range 3 {
		readOK(t, br)
		s = <-seen
		require.True(t, s.known)
		if i == 0 {
			require.Equal(t, getReq+getReq, string(s.pending), "the pipelined requests, as fasthttp read them")
		}
	}
	// And the connection goes on.
	_, err = c.Write([]byte(getReq))
	require.NoError(t, err)
	readOK(t, br)
	<-seen
}

// A connection that serves hijacked request after hijacked request stays
// one wrapper deep over its socket.
func TestResumeStaysOneDeep(t *testing.T) {
	seen, c, br := dialHijackServer(t)
	var first hijackSeen
	for i := range 5 {
		_, err := c.Write([]byte(getReq))
		require.NoError(t, err)
		readOK(t, br)
		s := <-seen
		if i == 0 {
			first = s
			require.Same(t, s.conn, s.rc.Conn, "the first resume reads from the client connection itself")
			continue
		}
		require.Same(t, first.rc, s.conn, "request %d came through the resumed connection", i)
		require.Same(t, first.rc, s.rc, "request %d: the resumed connection is reused, not wrapped again", i)
		require.Same(t, first.conn, s.rc.raw)
	}
}

// A resumed connection whose pending bytes are not all read yet when it is
// resumed again reads the new pending bytes, then the old, then the socket.
func TestResumeOrdersPendingBytes(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	rc := resume(a, []byte("old"))
	rc2 := resume(rc, []byte("new "))
	require.NotSame(t, rc, rc2)
	require.Same(t, a, rc2.raw)
	go func() { _, _ = b.Write([]byte(" socket")) }()
	got := make([]byte, 0, 16)
	buf := make([]byte, 16)
	for len(got) < len("new old socket") {
		n, err := rc2.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, "new old socket", string(got))
}
