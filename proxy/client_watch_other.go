//go:build !linux

package proxy

import (
	"net"

	"github.com/valyala/fasthttp"
)

// disconnectWatcher is Linux-only (epoll); elsewhere a client that leaves
// is noticed at shepherd's next write, as before.
type disconnectWatcher struct{ count func(route, phase string) }

type watchedConn struct{}

func newDisconnectWatcher(func(route, phase string)) *disconnectWatcher { return nil }

func (d *disconnectWatcher) watch(net.Conn, string) *clientWatch { return nil }

func (d *disconnectWatcher) unwatch(*clientWatch) {}

func (d *disconnectWatcher) connState(net.Conn, fasthttp.ConnState) {}

func (d *disconnectWatcher) detach(net.Conn) {}

func (d *disconnectWatcher) drop(net.Conn) {}

func (d *disconnectWatcher) rekey(net.Conn, net.Conn) {}

func (d *disconnectWatcher) close() {}
