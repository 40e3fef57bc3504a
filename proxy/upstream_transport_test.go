package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// scriptedUpstream is a TCP server answering every request it reads with the
// next of its scripted raw responses (status line, headers and body as
// bytes); a response may stall (hold) after its first part until released.
type scriptedUpstream struct {
	ln      net.Listener
	accepts atomic.Int32
	mu      sync.Mutex
	replies []rawReply
	release chan struct{} // closed to let stalled replies go on
}

type rawReply struct {
	parts [][]byte // written in turn; before the second, the reply waits for release
	close bool     // close the connection after the reply
}

func newScriptedUpstream(t *testing.T, replies ...rawReply) *scriptedUpstream {
	t.Helper()
	u := &scriptedUpstream{replies: replies, release: make(chan struct{})}
	u.ln = kit.ServeConns(t, u.serve)
	return u
}

func (u *scriptedUpstream) serve(c net.Conn) {
	u.accepts.Add(1)
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var req fasthttp.Request
		if err := req.Read(br); err != nil {
			return
		}
		u.mu.Lock()
		if len(u.replies) == 0 {
			u.mu.Unlock()
			return
		}
		r := u.replies[0]
		u.replies = u.replies[1:]
		u.mu.Unlock()
		for i, p := range r.parts {
			if i == 1 {
				<-u.release
			}
			if _, err := c.Write(p); err != nil {
				return
			}
		}
		if r.close {
			return
		}
	}
}

func (u *scriptedUpstream) client(t *testing.T) *upstream {
	t.Helper()
	up, err := newUpstream(ProviderAnthropic, "http://"+u.ln.Addr().String(), upstreamOptions{DialTimeout: time.Second, MaxConns: 4, Timeout: 5 * time.Second})
	require.NoError(t, err)
	return up
}

// roundTrip sends one request and returns the response with its body
// stream (the caller reads and closes it).
func roundTrip(t *testing.T, up *upstream) *fasthttp.Response {
	t.Helper()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI("http://" + up.host + "/v1/messages")
	req.Header.SetMethod("POST")
	req.SetBodyString(`{}`)
	resp := fasthttp.AcquireResponse()
	t.Cleanup(func() { fasthttp.ReleaseResponse(resp) })
	require.NoError(t, up.client.DoTimeout(req, resp, 5*time.Second))
	return resp
}

func readBody(t *testing.T, resp *fasthttp.Response) ([]byte, error) {
	t.Helper()
	if resp.BodyStream() == nil { // a response without a body
		return resp.Body(), nil
	}
	b, err := io.ReadAll(resp.BodyStream())
	require.NoError(t, resp.CloseBodyStream())
	return b, err
}

func chunked(parts ...string) string {
	var sb strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&sb, "%x\r\n%s\r\n", len(p), p)
	}
	return sb.String() + "0\r\n\r\n"
}

// Every framing reads back byte for byte; a body read to its end gives its
// connection back for the next request, and one read to the close does not.
func TestConnBodyFramings(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 4<<10) // 64 KB: past every buffer
	cases := []struct {
		name  string
		reply string
		body  string
		reuse bool
	}{
		{"content-length small", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "hello", true},
		{"content-length big", fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(big), big), big, true},
		{"content-length empty", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("data: a\n\n", "data: bc\n\n", big), "data: a\n\ndata: bc\n\n" + big, true},
		{"chunked extensions and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2 \r\nde\r\n0\r\nX-T: 1\r\n\r\n", "abcde", true},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", "", true},
		{"interim first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", true},
		{"to the close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big, big, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"
			u := newScriptedUpstream(t, rawReply{parts: [][]byte{[]byte(c.reply)}, close: !c.reuse}, rawReply{parts: [][]byte{[]byte(next)}})
			up := u.client(t)
			resp := roundTrip(t, up)
			got, err := readBody(t, resp)
			require.NoError(t, err)
			assert.Equal(t, c.body, string(got))
			got, err = readBody(t, roundTrip(t, up))
			require.NoError(t, err)
			assert.Equal(t, "next", string(got))
			want := int32(2)
			if c.reuse {
				want = 1
			}
			assert.Equal(t, want, u.accepts.Load(), "connections opened")
		})
	}
}

// A body closed before its end, or a broken one, closes its connection.
func TestConnBodyUnfinishedClosesConn(t *testing.T) {
	next := rawReply{parts: [][]byte{[]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")}}
	for _, c := range []struct{ name, reply string }{
		{"closed early", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"},
		{"bare LF chunk line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newScriptedUpstream(t, rawReply{parts: [][]byte{[]byte(c.reply)}}, next)
			up := u.client(t)
			resp := roundTrip(t, up)
			if c.name == "closed early" {
				p := make([]byte, 3)
				_, err := io.ReadFull(resp.BodyStream(), p)
				require.NoError(t, err)
				require.NoError(t, resp.CloseBodyStream())
			} else {
				_, err := readBody(t, resp)
				require.Error(t, err)
			}
			got, err := readBody(t, roundTrip(t, up))
			require.NoError(t, err)
			assert.Equal(t, "ok", string(got))
			assert.Equal(t, int32(2), u.accepts.Load(), "the first connection was not reused")
		})
	}
}

// A stream waiting for its next event holds no read buffer: the head's
// buffer went back to the pool once its bytes were read, and nothing is
// read ahead. Closing it while a Read waits ends that Read.
func TestConnBodyIdleHoldsNoBuffer(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + "a\r\ndata: one\n\r\n"
	u := newScriptedUpstream(t, rawReply{parts: [][]byte{[]byte(head), []byte("a\r\ndata: two\n\r\n0\r\n\r\n")}})
	up := u.client(t)
	resp := roundTrip(t, up)
	b, ok := resp.BodyStream().(*connBody)
	require.True(t, ok, "the body is read from the connection")
	require.NotNil(t, b.src.lazy, "a TCP connection waits for data without a buffer")
	p := make([]byte, 64)
	n, err := b.Read(p)
	require.NoError(t, err)
	assert.Equal(t, "data: one\n", string(p[:n]))
	assert.True(t, b.src.br == nil, "the head's read buffer is back in the pool")
	assert.True(t, b.src.ahead == nil, "nothing is read ahead")

	done := make(chan error, 1)
	go func() { _, err := b.Read(p); done <- err }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the read returned before the upstream sent anything: %v", err)
	default:
	}
	require.NoError(t, b.CloseWithError(errClientGone))
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("closing the body did not end the waiting read")
	}
	close(u.release)
}

// The events that arrived together are served from one socket read, the
// rest read ahead, and the read-ahead buffer goes back once drained.
func TestConnBodyReadAhead(t *testing.T) {
	var events strings.Builder
	for i := range 50 {
		fmt.Fprintf(&events, "data: event %02d\n\n", i)
	}
	reply := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", events.Len())
	u := newScriptedUpstream(t, rawReply{parts: [][]byte{[]byte(reply), []byte(events.String())}})
	up := u.client(t)
	resp := roundTrip(t, up)
	close(u.release)
	b := resp.BodyStream().(*connBody)
	var got bytes.Buffer
	p := make([]byte, 32)
	sawAhead := false
	for {
		n, err := b.Read(p)
		got.Write(p[:n])
		sawAhead = sawAhead || b.src.ahead != nil
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	assert.Equal(t, events.String(), got.String())
	assert.True(t, sawAhead, "small reads are served from the read-ahead buffer")
	assert.True(t, b.src.ahead == nil, "the read-ahead buffer went back")
	require.NoError(t, resp.CloseBodyStream())
}

// byteConn is a net.Conn reading from r (the fuzz test's connection).
type byteConn struct {
	net.Conn
	r io.Reader
}

func (c byteConn) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c byteConn) Close() error               { return nil }

// FuzzConnBodyChunked holds the chunked body decoder (the head's buffer,
// then the connection, whatever the split and the read sizes) to Go's own
// chunked reader over the same bytes: the same data, and an error where it
// fails.
func FuzzConnBodyChunked(f *testing.F) {
	f.Add([]byte(chunked("hello", "world")), uint8(3), uint8(7))
	f.Add([]byte("3;ext\r\nabc\r\n0\r\nT: v\r\n\r\n"), uint8(0), uint8(1))
	f.Add([]byte("1\r\na\r\n"), uint8(2), uint8(64))
	f.Add([]byte("zz\r\n"), uint8(1), uint8(5))
	f.Add([]byte("4\r\nab\r\n\r\n0\r\n\r\n"), uint8(9), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, split, readSize uint8) {
		want, wantErr := io.ReadAll(httputil.NewChunkedReader(bufio.NewReader(bytes.NewReader(in))))
		cut := min(int(split), len(in))
		br := bufio.NewReaderSize(bytes.NewReader(in[:cut]), max(16, cut))
		_, _ = br.Peek(cut) // the head's buffer holds all of in[:cut], as after a head
		var released atomic.Bool
		b := newConnBody(&fasthttp.HostClient{}, byteConn{r: iotest.HalfReader(bytes.NewReader(in[cut:]))}, br, -1, true,
			func(bool) { released.Store(true) })
		var got []byte
		p := make([]byte, int(readSize)+1)
		var err error
		for {
			var n int
			n, err = b.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				break
			}
		}
		require.NoError(t, b.CloseWithError(nil))
		require.True(t, released.Load())
		if wantErr != nil {
			require.Falsef(t, errors.Is(err, io.EOF), "Go's reader fails (%v), the body ended well with %q", wantErr, got)
			return
		}
		if errors.Is(err, io.EOF) {
			require.Equal(t, string(want), string(got))
			return
		}
		// Go's reader stops at the last chunk; the body also reads the
		// trailer section, which may be missing or malformed.
		require.True(t, bytes.HasPrefix(want, got), "data %q is not Go's %q", got, want)
	})
}

// Over TLS the body is read through the TLS connection (its own buffers):
// the same bytes, the connection reused.
func TestConnBodyTLS(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	up, err := newUpstream(ProviderAnthropic, srv.URL, upstreamOptions{DialTimeout: time.Second, MaxConns: 4, Timeout: 5 * time.Second})
	require.NoError(t, err)
	up.client.TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test server's own certificate
	for range 2 {
		req := fasthttp.AcquireRequest()
		req.SetRequestURI(srv.URL + "/v1/messages")
		req.Header.SetMethod("POST")
		resp := fasthttp.AcquireResponse()
		require.NoError(t, up.client.DoTimeout(req, resp, 5*time.Second))
		fasthttp.ReleaseRequest(req)
		b, ok := resp.BodyStream().(*connBody)
		require.True(t, ok)
		assert.True(t, b.src.lazy == nil, "a TLS connection is read through TLS")
		got, err := readBody(t, resp)
		require.NoError(t, err)
		assert.Equal(t, "data: 0\n\ndata: 1\n\ndata: 2\n\n", string(got))
		fasthttp.ReleaseResponse(resp)
	}
	assert.Equal(t, int32(1), conns.Load(), "the connection is reused")
}

// fasthttp's buffering helpers (HostClient.Get) ask for the body whole:
// it is read with the head, chunked or not, and the connection reused.
func TestConnBodyWholeForGet(t *testing.T) {
	u := newScriptedUpstream(t,
		rawReply{parts: [][]byte{[]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("who", "le"))}},
		rawReply{parts: [][]byte{[]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext")}})
	up := u.client(t)
	for _, want := range []string{"whole", "next"} {
		code, body, err := up.client.Get(nil, "http://"+up.host+"/v1/models")
		require.NoError(t, err)
		assert.Equal(t, 200, code)
		assert.Equal(t, want, string(body))
	}
	assert.Equal(t, int32(1), u.accepts.Load())
}
