package proxy

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

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
		gathered   bool // in one writeBuffers call
	}{
		{"small", 100, 0, true},
		{"fills the buffer", 16 << 10, 0, true},
		{"larger than the buffer", 200 << 10, 0, true},
		{"head larger than the buffer", 1000, 20 << 10, false},
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
			setWatchedBody(req, resp, body, nil)
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
				assert.Equal(t, tc.body, conn.gathered[0][1], "the body whole, after the head")
			} else {
				assert.Empty(t, conn.gathered)
				assert.Equal(t, 2, conn.writes, "the head, then the body")
			}
		})
	}
}
