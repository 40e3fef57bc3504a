package proxy

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// perIPListener caps the connections open at once from one client address
// (limits.max_conns_per_ip). The connection beyond the cap is answered 429
// and closed without being handed to the server. fasthttp's own
// Server.MaxConnsPerIP is not used: its connection wrapper clears the
// underlying connection on Close without synchronising with a concurrent
// Read, which races (and can dereference nil) when Shutdown closes idle
// connections.
type perIPListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[netip.Addr]int
}

func newPerIPListener(ln net.Listener, max int) *perIPListener {
	return &perIPListener{Listener: ln, max: max, open: map[netip.Addr]int{}}
}

// Accept implements net.Listener.
func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			go refuseConn(c)
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &ipCountedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *perIPListener) release(ip netip.Addr) {
	l.mu.Lock()
	if l.open[ip] <= 1 {
		delete(l.open, ip)
	} else {
		l.open[ip]--
	}
	l.mu.Unlock()
}

// remoteIP is the connection's peer address without the port (IPv4-mapped
// IPv6 unmapped, so both spellings count as one client).
func remoteIP(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// connLimitResponse is the 429 a refused connection reads. The API is not known
// before a request is read; error.message is where every supported API's
// clients look.
var connLimitResponse = func() []byte {
	body := errorAPI(ProviderOpenAI).ErrorBody(fasthttp.StatusTooManyRequests,
		"too many open connections from this address (limits.max_conns_per_ip)")
	return []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}()

func refuseConn(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(connLimitResponse)
	_ = c.Close()
}

// ipCountedConn gives its slot back once, on the first Close.
type ipCountedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// errNotSyscallConn: the wrapped connection has no descriptor.
var errNotSyscallConn = errors.New("proxy: connection is not a syscall.Conn")

// SyscallConn gives the wrapped socket's descriptor (syscall.Conn), for
// the disconnect watcher, which cannot watch a connection without one.
func (c *ipCountedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errNotSyscallConn
	}
	return sc.SyscallConn()
}

// Close implements net.Conn.
func (c *ipCountedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
