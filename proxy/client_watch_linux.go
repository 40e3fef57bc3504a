//go:build linux

package proxy

import (
	"net"
	"sync"
	"syscall"

	"github.com/valyala/fasthttp"
)

// disconnectWatcher reports client connections whose peer closed, for all
// watched connections at once: one epoll instance and one goroutine waiting
// on it. A client connection is registered once, at its first watched
// request, and stays registered for its life: edge-triggered for
// EPOLLRDHUP (the peer shut its side; hang-ups and errors are always
// reported), so the kernel reports the close once, and at once for a
// socket whose peer had already closed when it was registered. Each request
// then attaches its clientWatch to the connection's entry (watch) and
// detaches it when done (unwatch), a map look-up under the mutex and no
// system call: a keep-alive connection costs one epoll_ctl for all its
// requests, and none to leave (the kernel drops the registration with the
// socket). A watch costs no goroutine or timer, so open idle streams stay
// cheap; pipelined request bytes wake nothing.
//
// A close reported between requests marks the idle connection gone: there
// is nothing to cancel, but a request fasthttp still reads from it (bytes
// that came before the peer's FIN: a pipelined request, or a request
// followed by a half-close) is gone as soon as it attaches, as it would be
// if the connection were registered then.
//
// The entry is dropped when fasthttp reports the connection closed or
// hijacked (connState, the server's ConnState hook); a hijacked connection
// lives on, so its registration is deleted as well. Events carry the entry's
// id, never reused, so a late event of a dropped connection reaches nothing,
// even when its descriptor already belongs to another socket. The goroutine
// starts with the first registration and stops at close.
type disconnectWatcher struct {
	epfd  int
	count func(route, phase string)

	mu         sync.Mutex
	byConn     map[net.Conn]*watchedConn
	byID       map[uint64]*watchedConn
	nextID     uint64
	registered uint64 // connections registered with epoll (EPOLL_CTL_ADD), ever
	started    bool
	closed     bool
	done       chan struct{}
}

// watchedConn is a client connection's entry in the watcher. Its fields are
// guarded by the watcher's mutex.
type watchedConn struct {
	// raw is the registered socket; nil when the connection could not be
	// registered (its requests are not watched, and not retried).
	raw syscall.RawConn
	// id is what the registration's events carry (0: not registered).
	id uint64
	// w is the watch of the request the connection serves; nil between
	// requests.
	w *clientWatch
	// gone: the peer closed (an event came).
	gone bool
	// detached: the connection is being hijacked for a detached stream
	// (stream_detach.go), which keeps the registration until it drops it.
	detached bool
}

// epollET is EPOLLET (syscall spells it as a negative int).
const epollET = 1 << 31

// newDisconnectWatcher returns a watcher that calls count for every client
// it finds gone; nil when epoll is unavailable.
func newDisconnectWatcher(count func(route, phase string)) *disconnectWatcher {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	return &disconnectWatcher{
		epfd: epfd, count: count,
		byConn: map[net.Conn]*watchedConn{}, byID: map[uint64]*watchedConn{},
		done: make(chan struct{}),
	}
}

// watch attaches a new watch of route's request to c, registering c at its
// first watched request; nil when c is not a socket, cannot be registered,
// or the watcher is closed. A connection whose peer already closed gives a
// watch that has fired (left reports true; the disconnect is counted).
func (d *disconnectWatcher) watch(c net.Conn, route string) *clientWatch {
	if _, ok := c.(syscall.Conn); !ok {
		return nil
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	e := d.byConn[c]
	if e == nil {
		e = d.register(c)
	}
	if e.raw == nil {
		d.mu.Unlock()
		return nil
	}
	w := &clientWatch{d: d, route: route, phase: phaseWaitingUpstream, wc: e}
	e.w = w
	gone := e.gone
	d.mu.Unlock()
	if gone {
		w.fire()
	}
	return w
}

// register adds c to the epoll instance and to the watcher's maps, under
// d.mu (an event for it may come before the call returns: the loop finds
// the entry once it gets the mutex). A connection that cannot be registered
// gets an entry without raw, so its later requests make no system call.
func (d *disconnectWatcher) register(c net.Conn) *watchedConn {
	e := &watchedConn{}
	d.byConn[c] = e
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return e
	}
	id := d.nextID + 1
	var addErr error
	err = raw.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | epollET, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
		addErr = syscall.EpollCtl(d.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || addErr != nil {
		return e
	}
	d.nextID, d.registered = id, d.registered+1
	e.raw, e.id = raw, id
	d.byID[id] = e
	if !d.started {
		d.started = true
		go d.run()
	}
	return e
}

// unwatch detaches w from its connection (the request is done with it).
func (d *disconnectWatcher) unwatch(w *clientWatch) {
	d.mu.Lock()
	if w.wc.w == w {
		w.wc.w = nil
	}
	d.mu.Unlock()
}

// connState is the server's fasthttp ConnState hook: a connection closed or
// hijacked leaves the watcher. A closed connection's registration went with
// its socket. A hijacked one's socket lives on: its registration is deleted
// (Control fails without touching the descriptor if the hijacker closed it
// already, which may belong to another socket by now). A connection hijacked
// for a detached stream stays until the stream drops it.
func (d *disconnectWatcher) connState(c net.Conn, state fasthttp.ConnState) {
	if state != fasthttp.StateClosed && state != fasthttp.StateHijacked {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.byConn[c]; e != nil && e.detached && state == fasthttp.StateHijacked {
		return
	}
	d.forget(c, state == fasthttp.StateHijacked)
}

// detach keeps c's registration, and the watch of the request it serves,
// through fasthttp's hijack of c: a detached stream's client is still
// watched while the stream is open. The stream drops it when it ends.
func (d *disconnectWatcher) detach(c net.Conn) {
	if d == nil {
		return
	}
	d.mu.Lock()
	if e := d.byConn[c]; e != nil {
		e.detached = true
	}
	d.mu.Unlock()
}

// rekey moves old's registration, kept through a detached stream, to c, the
// connection fasthttp serves next over the same socket (the same
// registration: no system call).
func (d *disconnectWatcher) rekey(old, c net.Conn) {
	if d == nil {
		return
	}
	d.mu.Lock()
	if e := d.byConn[old]; e != nil {
		delete(d.byConn, old)
		e.detached = false
		e.w = nil
		d.byConn[c] = e
	}
	d.mu.Unlock()
}

// drop deletes c's registration: its detached stream ended, and c is then
// closed.
func (d *disconnectWatcher) drop(c net.Conn) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forget(c, true)
}

// forget deletes c's entry; live: c's socket lives on, so its epoll
// registration is deleted too. d.mu is held.
func (d *disconnectWatcher) forget(c net.Conn, live bool) {
	e := d.byConn[c]
	if e == nil {
		return
	}
	delete(d.byConn, c)
	if e.raw == nil {
		return
	}
	delete(d.byID, e.id)
	if live && !d.closed {
		_ = e.raw.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(d.epfd, syscall.EPOLL_CTL_DEL, int(fd), &syscall.EpollEvent{})
		})
	}
}

// run waits for closed peers, marks their connections gone and fires the
// watches attached to them.
func (d *disconnectWatcher) run() {
	defer close(d.done)
	var evs [64]syscall.EpollEvent
	var fire []*clientWatch
	for {
		// The timeout only bounds how long close waits for this loop.
		n, err := syscall.EpollWait(d.epfd, evs[:], 100)
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return
		}
		fire = fire[:0]
		for i := 0; err == nil && i < n; i++ {
			id := uint64(uint32(evs[i].Fd)) | uint64(uint32(evs[i].Pad))<<32
			if e := d.byID[id]; e != nil {
				// Any event is the peer's close or an error: the
				// interest set holds nothing else.
				e.gone = true
				if e.w != nil {
					fire = append(fire, e.w)
				}
			}
		}
		d.mu.Unlock()
		for _, w := range fire {
			w.fire()
		}
		clear(fire)
	}
}

// close stops the watcher; watches still open stop watching (no event
// fires them any more) and no new one starts.
func (d *disconnectWatcher) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	started := d.started
	d.mu.Unlock()
	if started {
		<-d.done
	}
	_ = syscall.Close(d.epfd)
}
