package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// With a connection, the first chunk goes through the chunk writer (it
// leaves with the headers in fasthttp's buffer) and every later one is
// framed by the stream writer and written to the connection in one write;
// a large write still goes through the chunk writer.
func TestStreamWriterFramesLaterChunksOnTheConnection(t *testing.T) {
	var chunks, conn recordingWriter
	sw := newStreamWriter(&chunks)
	sw.conn = &conn
	_, _ = sw.Write([]byte("data: 1\n\n"))
	require.NoError(t, sw.Flush())
	_, _ = sw.Write([]byte("data: 22\n\n"))
	_, _ = sw.Write([]byte("data: 333\n\n"))
	require.NoError(t, sw.Flush())
	big := strings.Repeat("x", coalesceSize)
	_, _ = sw.Write([]byte(big))
	_, _ = sw.Write([]byte("data: 4\n\n"))
	require.NoError(t, sw.Flush())
	require.Equal(t, []string{"data: 1\n\n", big}, chunks.writes)
	require.Equal(t, []string{"15\r\ndata: 22\n\ndata: 333\n\n\r\n", "9\r\ndata: 4\n\n\r\n"}, conn.writes)
	require.EqualValues(t, 9+21+len(big)+9, sw.n, "n counts body bytes, not framing")
	require.Nil(t, sw.buf, "an idle stream holds no buffer")

	// A failed write to the connection is the client gone.
	boom := errors.New("boom")
	sw.conn = writerFunc(func([]byte) (int, error) { return 0, boom })
	_, _ = sw.Write([]byte("data: 5\n\n"))
	require.ErrorIs(t, sw.Flush(), boom)
	_, err := sw.Write([]byte("data: 6\n\n"))
	require.ErrorIs(t, err, boom)
}

// Through fasthttp, a stream that idles between its events and then
// resumes delivers the same bytes, framed as valid chunks, in order with
// the headers before and the last chunk and trailer after; the chunks after
// the first are written by the stream writer itself.
func TestStreamBodyIdleThenResumeThroughFasthttp(t *testing.T) {
	events := []string{"event: a\ndata: 1\n\n", "event: b\ndata: 22\n\n", "event: c\ndata: 333\n\n",
		strings.Repeat("d", coalesceSize+7) + "\n\n", "event: e\ndata: 4444\n\n"}
	resume := make(chan struct{})
	direct := make(chan bool, 1)
	dial := serveInMemory(t, func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("text/event-stream")
		h := &ctx.Response.Header
		require.NoError(t, h.AddTrailer("X-Done"))
		ctx.SetBodyStream(newStreamBody(func(w io.Writer) {
			direct <- w.(*streamWriter).conn != nil
			write(w, []byte(events[0]))
			<-resume // idle: nothing pending, no buffer held
			_, _ = w.Write([]byte(events[1]))
			_, _ = w.Write([]byte(events[2]))
			flush(w)
			<-resume
			write(w, []byte(events[3]))
			write(w, []byte(events[4]))
		}).withConn(ctx.Conn()).withTrailer(func() { h.Set("X-Done", "yes") }), -1)
	})
	c := dial()
	defer c.Close()
	_, err := c.Write([]byte("GET /s HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n"))
	require.NoError(t, err)
	require.True(t, <-direct, "fasthttp's chunk writer is recognised (isChunkWriter)")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	first := make([]byte, len(events[0]))
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err)
	require.Equal(t, events[0], string(first))
	time.Sleep(50 * time.Millisecond)
	resume <- struct{}{}
	time.Sleep(50 * time.Millisecond)
	resume <- struct{}{}
	rest, err := io.ReadAll(resp.Body) // net/http's chunked reader rejects bad framing
	require.NoError(t, err)
	require.Equal(t, strings.Join(events[1:], ""), string(rest))
	require.Equal(t, "yes", resp.Trailer.Get("X-Done"))

	// The connection serves the next request.
	_, err = c.Write([]byte("GET /s HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	close(resume)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.True(t, bytes.Equal([]byte(strings.Join(events, "")), body))
}

// A body written with a fixed length gets the connection's buffered writer,
// not the chunk writer: the stream writer must not frame chunks there.
func TestIsChunkWriter(t *testing.T) {
	require.False(t, isChunkWriter(bufio.NewWriter(io.Discard)))
	require.False(t, isChunkWriter(nil))
	require.False(t, isChunkWriter(&recordingWriter{}))
}
