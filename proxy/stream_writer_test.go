package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

func TestStreamWriterCoalescesUntilFlush(t *testing.T) {
	var rw recordingWriter
	sw := newStreamWriter(&rw)
	for _, ev := range []string{"event: a\n\n", "event: b\n\n", "event: c\n\n"} {
		n, err := sw.Write([]byte(ev))
		require.NoError(t, err)
		require.Equal(t, len(ev), n)
	}
	require.Empty(t, rw.writes, "nothing is sent before a flush")
	require.NotNil(t, sw.buf)
	require.NoError(t, sw.Flush())
	require.Equal(t, []string{"event: a\n\nevent: b\n\nevent: c\n\n"}, rw.writes)
	require.Nil(t, sw.buf, "an idle stream holds no buffer")
	require.NoError(t, sw.Flush(), "flushing nothing sends nothing")
	require.Len(t, rw.writes, 1)
	require.EqualValues(t, 30, sw.n)
}

func TestStreamWriterLargeWrites(t *testing.T) {
	var rw recordingWriter
	sw := newStreamWriter(&rw)
	small := "data: small\n\n"
	big := strings.Repeat("x", coalesceSize)
	_, _ = sw.Write([]byte(small))
	_, _ = sw.Write([]byte(big))
	require.Equal(t, []string{small, big}, rw.writes, "pending bytes go first, then the large write on its own")
	// A write that does not fit next to the pending bytes flushes them.
	fill := strings.Repeat("y", coalesceSize-10)
	_, _ = sw.Write([]byte(fill))
	_, _ = sw.Write([]byte(small))
	require.NoError(t, sw.Flush())
	require.Equal(t, []string{small, big, fill, small}, rw.writes)
	for _, w := range rw.writes {
		require.LessOrEqual(t, len(w), coalesceSize)
	}
}

func TestStreamWriterClientGone(t *testing.T) {
	boom := errors.New("broken pipe")
	sw := newStreamWriter(writerFunc(func([]byte) (int, error) { return 0, boom }))
	_, err := sw.Write([]byte("pending"))
	require.NoError(t, err, "a buffered write cannot know yet")
	require.ErrorIs(t, sw.Flush(), boom)
	_, err = sw.Write([]byte("more"))
	require.ErrorIs(t, err, boom, "every write after the failure fails")
	require.False(t, write(sw, []byte("x")))
	require.Nil(t, sw.buf)
}

// The upstream body flushes the client's pending events before each read of
// the upstream, so no event waits while shepherd waits for the next one; a
// failed flush fails the read as the client's doing.
func TestUpstreamBodyFlushesBeforeReading(t *testing.T) {
	s := newStreamTestServer(t)
	var rw recordingWriter
	sw := newStreamWriter(&rw)
	up := &upstreamStream{r: strings.NewReader("event: a\n\nevent: b\n\n"), closed: make(chan error, 1)}
	resp := acquireStreamResponse(up)
	body := s.openUpstreamBody(resp, sw)
	defer body.close()

	_, _ = sw.Write([]byte("pending\n\n"))
	buf := make([]byte, 64)
	n, err := body.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "event: a\n\nevent: b\n\n", string(buf[:n]))
	require.Equal(t, []string{"pending\n\n"}, rw.writes, "flushed before the read")

	gone := newStreamWriter(writerFunc(func([]byte) (int, error) { return 0, io.ErrClosedPipe }))
	up2 := &upstreamStream{r: strings.NewReader("event: c\n\n"), closed: make(chan error, 1)}
	body2 := s.openUpstreamBody(acquireStreamResponse(up2), gone)
	defer body2.close()
	_, _ = gone.Write([]byte("pending\n\n"))
	_, err = body2.Read(buf)
	require.True(t, clientLeft(err))
	require.ErrorIs(t, err, io.ErrClosedPipe)
	require.False(t, clientLeft(io.ErrUnexpectedEOF))
}

// Events the upstream sends together leave in one write; an event that
// arrives alone leaves alone, before the next upstream read.
func TestForwardEventsCoalescesPerUpstreamRead(t *testing.T) {
	s := newStreamTestServer(t)
	var rw recordingWriter
	sw := newStreamWriter(&rw)
	// Three reads: two events, then one, then one.
	reads := [][]byte{
		[]byte("event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"),
		[]byte("event: c\ndata: 3\n\n"),
		[]byte("event: d\ndata: 4\n\n"),
	}
	up := &upstreamStream{r: &readsReader{reads: reads}, closed: make(chan error, 1)}
	body := s.openUpstreamBody(acquireStreamResponse(up), sw)
	defer body.close()
	var crlfSeen bool
	gone, err := forwardEvents(rewrite.NewReader(body), sw, nil, false, &crlfSeen)
	require.False(t, gone)
	require.NoError(t, err)
	require.NoError(t, sw.Flush())
	require.Equal(t, []string{
		"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n",
		"event: c\ndata: 3\n\n",
		"event: d\ndata: 4\n\n",
	}, rw.writes)
}

// readsReader returns one element of reads per Read.
type readsReader struct{ reads [][]byte }

func (r *readsReader) Read(p []byte) (int, error) {
	if len(r.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.reads[0])
	r.reads[0] = r.reads[0][n:]
	if len(r.reads[0]) == 0 {
		r.reads = r.reads[1:]
	}
	return n, nil
}

// acquireStreamResponse is an upstream response whose body streams from r.
func acquireStreamResponse(r io.Reader) *fasthttp.Response {
	resp := fasthttp.AcquireResponse()
	resp.SetBodyStream(r, -1)
	return resp
}

// rawUpstream accepts one connection, reads a request head and answers with
// the given writes of raw bytes, pausing between them.
func rawUpstream(t *testing.T, pause time.Duration, writes ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		for i, w := range writes {
			if i > 0 {
				time.Sleep(pause)
			}
			if _, err := c.Write([]byte(w)); err != nil {
				return
			}
		}
		time.Sleep(pause)
	}()
	return "http://" + ln.Addr().String()
}

// readChunks reads a chunked HTTP response from r and returns its chunks.
func readChunks(t *testing.T, r *bufio.Reader) []string {
	t.Helper()
	for { // the head
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if line == "\r\n" {
			break
		}
	}
	var chunks []string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		require.NoError(t, err)
		if n == 0 {
			return chunks
		}
		b := make([]byte, n+2)
		_, err = io.ReadFull(r, b)
		require.NoError(t, err)
		chunks = append(chunks, string(b[:n]))
	}
}

// Through the real upstream client: events that arrive together go to the
// client in one chunk, an event that arrives later in a chunk of its own,
// as soon as it arrived (before the proxy waits for the upstream again).
func TestStreamCoalescesWhatArrivedTogether(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	ch := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	up := rawUpstream(t, 300*time.Millisecond,
		head+ch("data: a\n\n")+ch("data: b\n\n")+ch("data: c\n\n"),
		ch("data: d\n\n"),
		ch("data: e\n\n")+"0\r\n\r\n")

	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = up, up, up
	s, err := New(Options{Config: &cfg, Store: state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("GET /v1/other/stream HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	require.Equal(t, []string{"data: a\n\ndata: b\n\ndata: c\n\n", "data: d\n\n", "data: e\n\n"},
		readChunks(t, bufio.NewReader(c)))
}

// flushingReader flushes sw before every read of r, as the upstream
// connection does, and returns at most one line per read.
type flushingReader struct {
	r  *bytes.Reader
	sw *streamWriter
}

func (f *flushingReader) Read(p []byte) (int, error) {
	if err := f.sw.Flush(); err != nil {
		return 0, err
	}
	line := 0
	for line < len(p) {
		b, err := f.r.ReadByte()
		if err != nil {
			if line > 0 {
				return line, nil
			}
			return 0, err
		}
		p[line] = b
		line++
		if b == '\n' {
			break
		}
	}
	return line, nil
}

// Forwarding through a streamWriter flushed before every upstream read
// allocates nothing per event either (the pooled buffer is taken and given
// back per flush).
func TestStreamWriterForwardingAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	var sink countingSink
	sw := newStreamWriter(&sink)
	src := bytes.NewReader(nil)
	fr := &flushingReader{r: src, sw: sw}
	r := rewrite.NewReader(fr)
	run := func(stream []byte) float64 {
		return testing.AllocsPerRun(50, func() {
			src.Reset(stream)
			r.Reset(fr)
			crlfSeen := false
			gone, err := forwardEvents(r, sw, routeNamed("messages").api, true, &crlfSeen)
			if gone || err != nil || sw.Flush() != nil {
				t.Fatalf("forwardEvents: gone=%v err=%v", gone, err)
			}
		})
	}
	small, large := run(anthropicStream(100)), run(anthropicStream(1000))
	if large > small+0.5 {
		t.Fatalf("forwarding allocates per event: %.2f allocs for 104 events, %.2f for 1004", small, large)
	}
	if sink.writes < 1000 {
		t.Fatalf("%d writes: events were not sent one read at a time", sink.writes)
	}
}

type countingSink struct{ writes int }

func (c *countingSink) Write(p []byte) (int, error) { c.writes++; return len(p), nil }
