package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Provider names an upstream API family. It selects a base URL and an error
// shape; it is never seen by hooks.
type Provider string

// Providers shepherd routes to.
const (
	ProviderAnthropic Provider = "anthropic"
	ProviderOpenAI    Provider = "openai"
	ProviderGemini    Provider = "gemini"
)

// upstream is one provider's pooled HTTP client and base URL. It is built
// once at start-up and shared by all requests.
type upstream struct {
	provider Provider
	scheme   string // http or https
	host     string // Host header value (host[:port] as configured)
	prefix   string // path prefix from the base URL, without trailing slash
	client   *fasthttp.HostClient
}

// upstreamReadBuffer is the upstream connections' read buffer: the most
// bytes of response headers shepherd accepts (see newUpstream).
const upstreamReadBuffer = 8 << 10

// upstreamOptions are the client settings shared by every upstream.
type upstreamOptions struct {
	DialTimeout time.Duration
	MaxConns    int
	// Timeout is limits.upstream_timeout: every request's DoTimeout uses
	// it, and the transport bounds the exchange's silences with it.
	Timeout time.Duration
}

func newUpstream(p Provider, baseURL string, o upstreamOptions) (*upstream, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("proxy: upstream %s: %w", p, err)
	}
	addr := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr = net.JoinHostPort(u.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dialer := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	return &upstream{
		provider: p,
		scheme:   u.Scheme,
		host:     u.Host,
		prefix:   strings.TrimRight(u.Path, "/"),
		client: &fasthttp.HostClient{
			Addr:                     addr,
			Name:                     "shepherd",
			IsTLS:                    u.Scheme == "https",
			MaxConns:                 o.MaxConns,
			MaxIdleConnDuration:      90 * time.Second,
			StreamResponseBody:       true,
			DisablePathNormalizing:   true,
			NoDefaultUserAgentHeader: true,
			// Errors never quote the upstream's raw response bytes.
			SecureErrorLogMessage:         true,
			DisableHeaderNamesNormalizing: false,
			// The read buffer bounds the response headers: a response
			// whose headers do not fit fails as a bad gateway (fasthttp's
			// "small read buffer"). 8 KB is nginx's larger
			// proxy_buffer_size default (one page, 4 or 8 KB), four times
			// what the providers send (their rate-limit headers included,
			// 1-2 KB), so that a gateway in between that adds headers does
			// not break streams. A body gives it back once it has read
			// what it held after the head (upstreamTransport), so an open
			// stream does not keep it. Request bodies are written through
			// the write buffer, which goes back once the request is sent.
			ReadBufferSize:            upstreamReadBuffer,
			WriteBufferSize:           16 << 10,
			MaxIdemponentCallAttempts: 1,
			Transport:                 &upstreamTransport{timeout: o.Timeout},
			RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
			Dial: func(addr string) (net.Conn, error) {
				c, err := dialer.Dial("tcp", addr)
				if err != nil {
					return nil, err
				}
				return newIdleConn(c), nil
			},
		},
	}, nil
}

// idleConn turns fasthttp's absolute read deadline into an idle timeout:
// fasthttp sets one deadline (now + timeout) before reading the response
// headers and keeps it while a streamed body is read, which would cut every
// stream longer than the timeout. idleConn remembers the requested duration
// and re-arms it before every Read, so the limit applies to silence, not to
// the whole exchange.
//
// It also sends the client what the stream reading a response through it
// has pending (stream, set by openUpstreamBody) right before each read of
// the socket, which may wait for the upstream; the stream finds the
// connection from its response through the local address (connOf).
type idleConn struct {
	net.Conn
	idle   atomic.Int64 // nanoseconds; 0 = no deadline
	laddr  connAddr
	stream atomic.Pointer[upstreamBody] // the stream reading through this connection
	// raw is the socket, for readPooled; nil when c is not one (tests'
	// in-memory connections).
	raw syscall.RawConn
}

func newIdleConn(c net.Conn) *idleConn {
	ic := &idleConn{Conn: c}
	ic.laddr = connAddr{Addr: c.LocalAddr(), conn: ic}
	if sc, ok := c.(syscall.Conn); ok {
		ic.raw, _ = sc.SyscallConn()
	}
	return ic
}

// connAddr is an idleConn's local address: the socket's, plus the way back
// from a fasthttp.Response (which keeps its connection's LocalAddr, and
// nothing else of it) to the connection.
type connAddr struct {
	net.Addr
	conn *idleConn
}

// LocalAddr implements net.Conn.
func (c *idleConn) LocalAddr() net.Addr { return &c.laddr }

// connOf is the connection resp was read from, or nil when it did not come
// through an upstream client (or its body was read with the headers).
func connOf(resp *fasthttp.Response) *idleConn {
	if a, ok := resp.LocalAddr().(*connAddr); ok {
		return a.conn
	}
	return nil
}

func (c *idleConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		c.idle.Store(0)
		return c.Conn.SetReadDeadline(t)
	}
	c.idle.Store(int64(time.Until(t)))
	return c.Conn.SetReadDeadline(t)
}

func (c *idleConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// Read flushes the pending client bytes of the stream reading through c,
// then reads: it is called only when fasthttp's read buffer is empty, so
// events that arrived together are sent in one write and none waits while
// the read waits. A failed flush (the client went away) fails the read.
func (c *idleConn) Read(p []byte) (int, error) {
	if err := c.beforeRead(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	c.afterRead(err)
	return n, err
}

// beforeRead flushes the client bytes pending and re-arms the idle
// deadline (see Read).
func (c *idleConn) beforeRead() error {
	if b := c.stream.Load(); b != nil {
		if err := b.out.Flush(); err != nil {
			return clientWriteError{err}
		}
	}
	if d := time.Duration(c.idle.Load()); d > 0 {
		if err := c.Conn.SetReadDeadline(time.Now().Add(d)); err != nil {
			return err
		}
	}
	return nil
}

// afterRead marks the stream fired when the read ended at the deadline.
func (c *idleConn) afterRead(err error) {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if b := c.stream.Load(); b != nil {
			b.fired.Store(true) // silent past stream_idle_timeout (openUpstreamBody)
		}
	}
}

// readPooled is Read into a buffer from readAheadPool that it takes only
// once the socket has data: while it waits (an idle stream, for minutes)
// it holds no buffer. It returns the buffer with n > 0 bytes, or no
// buffer and an error (io.EOF when the upstream closed). c.raw must be set.
func (c *idleConn) readPooled() (buf *[]byte, n int, err error) {
	if err := c.beforeRead(); err != nil {
		return nil, 0, err
	}
	var rerr error
	err = c.raw.Read(func(fd uintptr) bool {
		if buf == nil {
			buf = readAheadPool.Get().(*[]byte)
		}
		for {
			n, rerr = syscall.Read(int(fd), *buf)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			readAheadPool.Put(buf)
			buf = nil
			return false // wait until readable, then call again
		}
		return true
	})
	switch {
	case err == nil && rerr != nil:
		err = os.NewSyscallError("read", rerr)
	case err == nil && n <= 0:
		err = io.EOF
	}
	if err != nil {
		if buf != nil {
			readAheadPool.Put(buf)
		}
		c.afterRead(err)
		return nil, 0, err
	}
	return buf, n, nil
}
