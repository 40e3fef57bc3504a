//go:build linux

package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
)

// stats reports how many connections the watcher ever registered and how
// many entries it holds (by connection, by event id).
func (d *disconnectWatcher) stats() (registered uint64, conns, ids int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.registered, len(d.byConn), len(d.byID)
}

// connGone reports whether the watcher saw c's peer close.
func (d *disconnectWatcher) connGone(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.byConn[c]
	return e != nil && e.gone
}

// countedDisconnects records what a watcher counts.
type countedDisconnects struct {
	mu     sync.Mutex
	phases []string
}

func (c *countedDisconnects) count(route, phase string) {
	c.mu.Lock()
	c.phases = append(c.phases, route+"/"+phase)
	c.mu.Unlock()
}

// settled returns the disconnects counted once there are at least n: a
// watch reports left before its watcher counts the disconnect (fire sets
// the flag under the watch's lock, then counts), so a test that saw left
// waits for the count.
func (c *countedDisconnects) settled(t *testing.T, n int) []string {
	t.Helper()
	require.Eventually(t, func() bool { return len(c.get()) >= n }, 3*time.Second, time.Millisecond, "the disconnect was not counted")
	return c.get()
}

func (c *countedDisconnects) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.phases...)
}

// tcpPair returns both ends of a loopback TCP connection: the server's (as
// fasthttp would hand it over) and the client's.
func tcpPair(t *testing.T) (srv, cli net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cli, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	srv, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close(); _ = cli.Close() })
	return srv, cli
}

func newTestWatcher(t *testing.T) (*disconnectWatcher, *countedDisconnects) {
	t.Helper()
	counted := &countedDisconnects{}
	d := newDisconnectWatcher(counted.count)
	require.NotNil(t, d)
	t.Cleanup(d.close)
	return d, counted
}

// TestWatcherIdleCloseGoneAtNextRequest: a peer that closes while its
// connection is between requests fires nothing and counts nothing, but a
// request read from that connection afterwards (bytes that came before the
// FIN) is gone from the start: its watch has fired and is counted once.
// The connection was registered once, and its entry leaves with it.
func TestWatcherIdleCloseGoneAtNextRequest(t *testing.T) {
	d, counted := newTestWatcher(t)
	srv, cli := tcpPair(t)

	w1 := d.watch(srv, "messages")
	require.NotNil(t, w1)
	require.False(t, w1.left())
	w1.stop()

	require.NoError(t, cli.Close())
	require.Eventually(t, func() bool { return d.connGone(srv) }, 3*time.Second, 5*time.Millisecond,
		"the idle connection's close was not reported")
	require.False(t, w1.left(), "a stopped watch does not fire")
	require.Empty(t, counted.get(), "an idle connection's close is no request's disconnect")

	w2 := d.watch(srv, "messages")
	require.NotNil(t, w2)
	require.True(t, w2.left(), "a request on a connection whose client left is gone at once")
	require.False(t, w2.sending(nil), "and is not sent upstream")
	require.False(t, w2.clientGone(), "the disconnect was counted already")
	w2.stop()
	require.Equal(t, []string{"messages/waiting_upstream"}, counted.get())

	registered, conns, ids := d.stats()
	require.Equal(t, uint64(1), registered, "one registration for both requests")
	require.Equal(t, 1, conns)
	require.Equal(t, 1, ids)

	require.NoError(t, srv.Close())
	d.connState(srv, fasthttp.StateClosed)
	_, conns, ids = d.stats()
	require.Zero(t, conns)
	require.Zero(t, ids)
}

// TestWatcherFiresAttachedWatchOnce: the close of a connection fires the
// watch of the request it serves, once, in that request's phase; the next
// watch of a live connection reuses the registration.
func TestWatcherFiresAttachedWatchOnce(t *testing.T) {
	d, counted := newTestWatcher(t)
	srv, cli := tcpPair(t)
	for range 3 {
		w := d.watch(srv, "messages")
		require.NotNil(t, w)
		require.False(t, w.left())
		w.stop()
	}
	w := d.watch(srv, "messages")
	w.reading(phaseStreaming)
	require.NoError(t, cli.Close())
	require.Eventually(t, w.left, 3*time.Second, 5*time.Millisecond, "the attached watch did not fire")
	require.False(t, w.clientGone(), "fired once")
	w.stop()
	require.Equal(t, []string{"messages/streaming"}, counted.settled(t, 1))
	registered, _, _ := d.stats()
	require.Equal(t, uint64(1), registered)
}

// TestWatcherHijackedConnDeregistered: a hijacked connection, still open,
// leaves the watcher and the epoll instance: watching it again makes a new
// registration (EPOLL_CTL_ADD of a descriptor still registered fails with
// EEXIST, which would give no watch), and that one works.
func TestWatcherHijackedConnDeregistered(t *testing.T) {
	d, counted := newTestWatcher(t)
	srv, cli := tcpPair(t)
	w := d.watch(srv, "messages")
	require.NotNil(t, w)
	w.stop()
	d.connState(srv, fasthttp.StateHijacked)
	registered, conns, ids := d.stats()
	require.Equal(t, uint64(1), registered)
	require.Zero(t, conns)
	require.Zero(t, ids)

	w = d.watch(srv, "responses")
	require.NotNil(t, w, "the hijacked connection is still registered with epoll")
	require.NoError(t, cli.Close())
	require.Eventually(t, w.left, 3*time.Second, 5*time.Millisecond)
	w.stop()
	require.Equal(t, []string{"responses/waiting_upstream"}, counted.settled(t, 1))
	registered, _, _ = d.stats()
	require.Equal(t, uint64(2), registered)
}

// TestWatcherKeepAliveRegistersOnce: through a real server, several
// requests on one keep-alive connection register it with the watcher once;
// once the client closes it between requests, its entry is gone as soon as
// the server has closed its side, and no disconnect was counted.
func TestWatcherKeepAliveRegistersOnce(t *testing.T) {
	m := mock.New(mock.Options{})
	require.NoError(t, m.Start())
	t.Cleanup(m.Close)
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	srv, err := New(Options{Config: &cfg, Logger: zaptest.NewLogger(t), Store: state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})})
	require.NoError(t, err)
	require.NotNil(t, srv.watcher)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	const n = 5
	body := `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for i := range n {
		_, err := fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: shepherd\r\nContent-Type: application/json\r\n"+
			"x-api-key: sk-test\r\nanthropic-version: 2023-06-01\r\nX-Session-Id: keepalive-%d\r\nContent-Length: %d\r\n\r\n%s", i, len(body), body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, string(b))
		require.False(t, resp.Close)
	}
	registered, conns, ids := srv.watcher.stats()
	require.Equal(t, uint64(1), registered, "%d requests on one connection", n)
	require.Equal(t, 1, conns)
	require.Equal(t, 1, ids)

	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		_, conns, ids := srv.watcher.stats()
		return conns == 0 && ids == 0
	}, 3*time.Second, 10*time.Millisecond, "the closed connection's entry is left")
	requireNoDisconnects(t, srv)
}

// requireNoDisconnects checks that shepherd_client_disconnects_total counted
// nothing.
func requireNoDisconnects(t *testing.T, s *Server) {
	t.Helper()
	mfs, err := s.metrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "shepherd_client_disconnects_total" {
			var total float64
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			require.Zero(t, total, "disconnects counted: %s", strings.TrimSpace(mf.String()))
		}
	}
}
