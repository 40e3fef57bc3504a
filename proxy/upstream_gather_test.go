package proxy

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// callCountingConn counts the writes made to a connection: plain writes,
// and gathered ones (buffersWriter) with their buffers' sizes.
type callCountingConn struct {
	net.Conn
	mu       sync.Mutex
	writes   int
	gathered [][]int
}

func (c *callCountingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *callCountingConn) writeBuffers(b *net.Buffers) (int64, error) {
	sizes := make([]int, 0, len(*b))
	for _, p := range *b {
		sizes = append(sizes, len(p))
	}
	c.mu.Lock()
	c.gathered = append(c.gathered, sizes)
	c.mu.Unlock()
	return b.WriteTo(c.Conn)
}

// echoBodyUpstream answers every request with its own body.
func echoBodyUpstream(t *testing.T) net.Listener {
	return kit.ServeConns(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReaderSize(c, 64<<10) // room for the large head
		bw := bufio.NewWriter(c)
		for {
			var req fasthttp.Request
			if err := req.Read(br); err != nil {
				return
			}
			var resp fasthttp.Response
			resp.SetBody(req.Body())
			if resp.Write(bw) != nil || bw.Flush() != nil {
				return
			}
		}
	})
}

// A request's head and body go upstream in one gathered write, whatever
// the body's size against the 16 KB write buffer; a head larger than the
// buffer goes first, and the body after it. The upstream reads the body
// byte for byte.
func TestRequestHeadAndBodyInOneWrite(t *testing.T) {
	ln := echoBodyUpstream(t)
	up, err := newUpstream(ProviderAnthropic, "http://"+ln.Addr().String(), upstreamOptions{DialTimeout: time.Second, MaxConns: 1, Timeout: 5 * time.Second})
	require.NoError(t, err)
	var conn *callCountingConn
	up.client.Dial = func(addr string) (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		conn = &callCountingConn{Conn: c}
		return conn, nil
	}
	cases := []struct {
		name       string
		body, head int
		copies     bool // half the body is a copied span of another buffer
		gathered   bool // with the head in one writeBuffers call
		segments   int  // of the body in it
	}{
		{"small", 100, 0, false, true, 1},
		{"fills the buffer", 16 << 10, 0, false, true, 1},
		{"larger than the buffer", 200 << 10, 0, false, true, 1},
		{"long, with copies", 1 << 20, 0, true, true, 3},
		{"head larger than the buffer", 1000, 20 << 10, false, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("0123456789abcdef"), tc.body/16+1)[:tc.body]
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI("http://" + up.host + "/v1/messages")
			req.Header.SetMethod("POST")
			if tc.head > 0 {
				req.Header.Set("X-Pad", strings.Repeat("p", tc.head))
			}
			wb := setWatchedBody(req, resp, body, nil)
			if tc.copies {
				src := append([]byte("{}"), body[tc.body/4:3*tc.body/4]...)
				wb.gather.copies = bodyCopies{src: src, runs: []rewrite.CopyRun{{Out: tc.body / 4, Src: 2, Len: tc.body / 2}}}
			}
			if conn != nil {
				conn.mu.Lock()
				conn.writes, conn.gathered = 0, nil
				conn.mu.Unlock()
			}
			require.NoError(t, up.client.DoTimeout(req, resp, 5*time.Second))
			got, err := readBody(t, resp)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(body, got), "the upstream read the body byte for byte")
			conn.mu.Lock()
			defer conn.mu.Unlock()
			if tc.gathered {
				require.Len(t, conn.gathered, 1, "one gathered write")
				assert.Equal(t, 0, conn.writes, "no other write")
				sum := 0
				for _, n := range conn.gathered[0][1:] {
					sum += n
				}
				assert.Len(t, conn.gathered[0], 1+tc.segments, "the head, then the body's segments")
				assert.Equal(t, tc.body, sum, "the body, after the head")
			} else {
				assert.Equal(t, 1, conn.writes, "the head")
				assert.Equal(t, [][]int{{tc.body}}, conn.gathered, "then the body")
			}
		})
	}
}

// A long body's copied spans are written from their source, in the body's
// order, and its other bytes from the body; short spans, short bodies,
// runs that do not fit the body and too many runs leave the body whole.
func TestGatherSegments(t *testing.T) {
	const size = 1 << 20
	body := make([]byte, size)
	src := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 7)
		src[i] = body[i]
	}
	within := func(seg, buf []byte) bool {
		if len(seg) == 0 || len(buf) == 0 {
			return false
		}
		s, b := uintptr(unsafe.Pointer(&seg[0])), uintptr(unsafe.Pointer(&buf[0]))
		return s >= b && s+uintptr(len(seg)) <= b+uintptr(len(buf))
	}
	big := gatherCopyMin
	cases := []struct {
		name    string
		body    []byte
		runs    []rewrite.CopyRun
		fromSrc []bool // per segment; nil: the body whole
	}{
		{"two long runs", body, []rewrite.CopyRun{{Out: 0, Src: 0, Len: 2 * big}, {Out: 3 * big, Src: 3 * big, Len: size - 3*big}},
			[]bool{true, false, true}},
		{"a short run stays in the body", body, []rewrite.CopyRun{{Out: 10, Src: 10, Len: 100}, {Out: big, Src: big, Len: 2 * big}},
			[]bool{false, true, false}},
		{"short body", body[:gatherCopiesMin-1], []rewrite.CopyRun{{Out: 0, Src: 0, Len: gatherCopiesMin - 1}}, nil},
		{"run past the source", body, []rewrite.CopyRun{{Out: 0, Src: 1, Len: size}}, nil},
		{"no runs", body, nil, nil},
	}
	var many []rewrite.CopyRun
	for i := 0; i < maxGatherSegments; i++ {
		many = append(many, rewrite.CopyRun{Out: 2 * i * big, Src: 2 * i * big, Len: big})
	}
	cases = append(cases, struct {
		name    string
		body    []byte
		runs    []rewrite.CopyRun
		fromSrc []bool
	}{"too many runs", body, many, nil})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := gatherWriter{body: tc.body, copies: bodyCopies{src: src, runs: tc.runs}}
			segs := g.appendBody(g.vec[:0])
			if tc.fromSrc == nil {
				require.Len(t, segs, 1)
				assert.True(t, within(segs[0], tc.body) && len(segs[0]) == len(tc.body), "the body whole")
				return
			}
			require.Len(t, segs, len(tc.fromSrc))
			var joined []byte
			for i, seg := range segs {
				assert.Equal(t, tc.fromSrc[i], within(seg, src), "segment %d from the source", i)
				assert.Equal(t, !tc.fromSrc[i], within(seg, tc.body), "segment %d from the body", i)
				joined = append(joined, seg...)
			}
			assert.True(t, bytes.Equal(tc.body, joined), "the segments are the body in order")
		})
	}
}
