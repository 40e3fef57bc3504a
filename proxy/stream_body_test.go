package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// pieces is a writer function that writes and flushes each piece and stops
// at the first failure, like the stream writers do; runs counts its runs.
func pieces(runs *atomic.Int32, failed chan<- error, ps ...string) func(io.Writer) {
	return func(w io.Writer) {
		runs.Add(1)
		for _, p := range ps {
			if _, err := w.Write([]byte(p)); err != nil {
				failed <- err
				return
			}
			if f, ok := w.(flusher); ok {
				if err := f.Flush(); err != nil {
					failed <- err
					return
				}
			}
		}
	}
}

// recordingWriter keeps every Write separately.
type recordingWriter struct{ writes []string }

func (r *recordingWriter) Write(p []byte) (int, error) {
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func TestStreamBodyWriteToRunsWriterOnce(t *testing.T) {
	var runs atomic.Int32
	b := newStreamBody(pieces(&runs, make(chan error, 1), "event: a\n\n", "event: b\n\n"))
	require.True(t, b.SupportsBodyWriteTo())

	var rw recordingWriter
	n, err := b.WriteTo(&rw)
	require.NoError(t, err)
	require.EqualValues(t, len("event: a\n\nevent: b\n\n"), n)
	require.Equal(t, []string{"event: a\n\n", "event: b\n\n"}, rw.writes, "each flush reaches the connection as one write (one chunk)")

	_, err = b.WriteTo(&rw)
	require.ErrorIs(t, err, errStreamBodyUsed)
	_, err = b.Read(make([]byte, 8))
	require.ErrorIs(t, err, errStreamBodyUsed)
	require.NoError(t, b.Close())
	require.EqualValues(t, 1, runs.Load(), "the writer runs exactly once")
}

func TestStreamBodyWriteToReportsClientError(t *testing.T) {
	var runs atomic.Int32
	failed := make(chan error, 1)
	b := newStreamBody(pieces(&runs, failed, "one", "two"))
	boom := errors.New("client gone")
	_, err := b.WriteTo(writerFunc(func([]byte) (int, error) { return 0, boom }))
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, <-failed, boom, "the writer sees the failed write")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestStreamBodyRead(t *testing.T) {
	var runs atomic.Int32
	b := newStreamBody(pieces(&runs, make(chan error, 1), "hello ", "world"))
	got, err := io.ReadAll(b)
	require.NoError(t, err)
	require.Equal(t, "hello world", string(got))
	require.NoError(t, b.Close())
	require.EqualValues(t, 1, runs.Load())
}

func TestStreamBodyCloseWhileReading(t *testing.T) {
	failed := make(chan error, 1)
	var runs atomic.Int32
	b := newStreamBody(pieces(&runs, failed, "first", "second", "third"))
	buf := make([]byte, 5)
	n, err := b.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "first", string(buf[:n]))
	require.NoError(t, b.Close())
	select {
	case err := <-failed:
		require.ErrorIs(t, err, io.ErrClosedPipe)
	case <-time.After(5 * time.Second):
		t.Fatal("the writer never saw the reader close")
	}
}

// A body dropped without being sent (HEAD, a connection that failed first)
// still runs its writer, against a writer that fails, so that the writer
// releases what it holds (the upstream response) exactly as when the client
// leaves.
func TestStreamBodyCloseBeforeSendRunsWriter(t *testing.T) {
	failed := make(chan error, 1)
	var runs atomic.Int32
	b := newStreamBody(pieces(&runs, failed, "never sent"))
	require.NoError(t, b.Close())
	select {
	case err := <-failed:
		require.ErrorIs(t, err, errStreamBodyClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the writer of a dropped body never ran")
	}
	require.NoError(t, b.Close(), "closing twice is harmless")
	_, err := b.WriteTo(io.Discard)
	require.ErrorIs(t, err, errStreamBodyUsed)
	require.EqualValues(t, 1, runs.Load())
}

// serveInMemory serves h with a fasthttp server on an in-memory listener
// and returns a dialer for it.
func serveInMemory(t *testing.T, h fasthttp.RequestHandler) func() net.Conn {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: h, ReduceMemoryUsage: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Shutdown()
		_ = ln.Close()
		<-done
	})
	return func() net.Conn {
		c, err := ln.Dial()
		require.NoError(t, err)
		return c
	}
}

// Through fasthttp, the writer runs on the connection's own goroutine (no
// second goroutine, no pipe), and every write goes out as one chunk.
func TestStreamBodyRunsOnConnectionGoroutine(t *testing.T) {
	stacks := make(chan string, 1)
	dial := serveInMemory(t, func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("text/event-stream")
		ctx.SetBodyStream(newStreamBody(func(w io.Writer) {
			buf := make([]byte, 64<<10)
			stacks <- string(buf[:runtime.Stack(buf, false)])
			_, _ = w.Write([]byte("data: 1\n\n"))
			_, _ = w.Write([]byte("data: 22\n\n"))
			flush(w)
			write(w, []byte("data: 333\n\n"))
		}), -1)
	})
	c := dial()
	defer c.Close()
	_, err := c.Write([]byte("GET /s HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	stack := <-stacks
	require.Contains(t, stack, "fasthttp.(*Server).serveConn", "the writer must run on the connection goroutine")
	require.NotContains(t, stack, "NewStreamReader")

	// The raw chunks: one per flush.
	c2 := dial()
	defer c2.Close()
	_, err = c2.Write([]byte("GET /s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	require.NoError(t, err)
	<-stacks
	raw, err := io.ReadAll(c2)
	require.NoError(t, err)
	_, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	require.True(t, ok)
	require.Equal(t, "13\r\ndata: 1\n\ndata: 22\n\n\r\nb\r\ndata: 333\n\n\r\n0\r\n\r\n", string(body))
}

// A HEAD request never sends the body: fasthttp closes it, and the writer
// still runs (and fails its first write).
func TestStreamBodyHeadRequestRunsWriter(t *testing.T) {
	failed := make(chan error, 1)
	var runs atomic.Int32
	dial := serveInMemory(t, func(ctx *fasthttp.RequestCtx) {
		ctx.SetBodyStream(newStreamBody(pieces(&runs, failed, "data: x\n\n")), -1)
	})
	c := dial()
	defer c.Close()
	_, err := c.Write([]byte("HEAD /s HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "HTTP/1.1 200"), line)
	select {
	case err := <-failed:
		require.ErrorIs(t, err, errStreamBodyClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the writer of a HEAD response never ran")
	}
}

// sizedReader serves data in reads no larger than step, recording the size
// of every buffer it was given.
type sizedReader struct {
	data  []byte
	steps []int // bytes to return per call, cycled; 0 means len(p)
	sizes []int
}

func (r *sizedReader) Read(p []byte) (int, error) {
	r.sizes = append(r.sizes, len(p))
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.steps) > 0 {
		if s := r.steps[0]; s > 0 {
			n = min(n, s)
		}
		r.steps = r.steps[1:]
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

func TestCopyChunksHoldsTheLargeBufferOnlyWhileReadsFillIt(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KB
	// Two full small reads, a full large read, a short one, then full reads.
	r := &sizedReader{data: data, steps: []int{0, 0, 0, 100, 0}}
	var out bytes.Buffer
	gone, err := copyChunks(r, &out, nil)
	require.False(t, gone)
	require.NoError(t, err)
	require.Equal(t, data, out.Bytes())
	require.Equal(t, smallChunk, r.sizes[0], "an idle stream waits with the small buffer")
	require.Equal(t, 32<<10, r.sizes[1], "a full read switches to the large buffer")
	require.Equal(t, 32<<10, r.sizes[2])
	require.Equal(t, 32<<10, r.sizes[3])
	require.Equal(t, smallChunk, r.sizes[4], "a short read gives the large buffer back")
	require.Equal(t, 32<<10, r.sizes[5])
}

func TestCopyChunksJSONArrayEnd(t *testing.T) {
	for _, tc := range []struct {
		body, sent string
		want       error
	}{
		{"[{\"a\":1},\n{\"b\":2}]\n", "[{\"a\":1},\n{\"b\":2}]\n", nil},
		{"[{\"a\":1},\n{\"b\":2}", "[{\"a\":1},\n{\"b\":2}", io.ErrUnexpectedEOF},
		{"[{\"a\":1},\n{\"b\":", "[{\"a\":1},\n", io.ErrUnexpectedEOF},
	} {
		var out bytes.Buffer
		_, err := copyChunks(&sizedReader{data: []byte(tc.body), steps: []int{5, 5, 5}}, &out, &jsonArrayStream{})
		require.ErrorIs(t, err, tc.want)
		require.Equal(t, tc.sent, out.String(), "only whole elements are sent")
	}
	var out bytes.Buffer
	_, err := copyChunks(&sizedReader{data: []byte("no array")}, &out, nil)
	require.NoError(t, err, "a pass-through stream has no end marker to check")
}

func TestCopyChunksClientGone(t *testing.T) {
	gone, err := copyChunks(&sizedReader{data: []byte("abc")}, writerFunc(func([]byte) (int, error) {
		return 0, errors.New("broken pipe")
	}), nil)
	require.True(t, gone)
	require.NoError(t, err)
}

// upstreamStream is an upstream body stream that records how it was closed.
type upstreamStream struct {
	r      io.Reader
	closed chan error // first CloseWithError
}

func (u *upstreamStream) Read(p []byte) (int, error) { return u.r.Read(p) }

func (u *upstreamStream) CloseWithError(err error) error {
	select {
	case u.closed <- err:
	default:
	}
	return nil
}

func newStreamTestServer(t *testing.T) *Server {
	t.Helper()
	cfg := config.Defaults()
	s, err := New(Options{Config: &cfg, Store: state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})})
	require.NoError(t, err)
	return s
}

// A stream's writer lives as long as the stream; the client request's body
// (up to limits.max_body_bytes) must not live with it. And a stream fasthttp
// drops without sending still reads and cancels its upstream.
func TestStreamReleasesRequestBody(t *testing.T) {
	s := newStreamTestServer(t)
	for _, start := range []struct {
		name string
		fn   func(*fasthttp.RequestCtx, *exchange)
	}{{"events", s.streamEvents}, {"chunks", s.streamChunks}} {
		t.Run(start.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetBody(bytes.Repeat([]byte("x"), 1<<20))
			up := &upstreamStream{r: strings.NewReader("event: ping\ndata: {}\n\n"), closed: make(chan error, 1)}
			resp := fasthttp.AcquireResponse()
			resp.SetBodyStream(up, -1)
			x := exchange{route: route{name: "passthrough"}, requestID: "r1", upResp: resp}
			x.call.Request = &conv.Request{}
			start.fn(&ctx, &x)
			require.Empty(t, ctx.Request.Body(), "the request body is released once the stream starts")

			ctx.Response.ResetBody() // dropped unsent (as for HEAD)
			select {
			case err := <-up.closed:
				require.ErrorIs(t, err, errClientGone)
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream of a dropped stream was never cancelled")
			}
		})
	}
}

func TestPassThroughExchangeDropsHookState(t *testing.T) {
	x := exchange{route: routeNamed("messages"), requestID: "r", crlf: true}
	x.call.Request = &conv.Request{}
	x.call.Session = &state.Session{}
	x.call.SessionID = "s"
	xs := passThroughExchange(&x)
	require.Nil(t, xs.call.Request)
	require.Nil(t, xs.call.Session)
	require.Equal(t, routeNamed("messages"), xs.route)
	require.Equal(t, "r", xs.requestID)
	require.True(t, xs.crlf)
	require.NotNil(t, x.call.Request, "the handler's exchange is left alone")
}
