//go:build linux

package proxy

import (
	"net"
	"sync"
	"syscall"
)

// disconnectWatcher reports client connections whose peer closed, for all
// watched connections at once: one epoll instance in which each watched
// socket is registered for EPOLLRDHUP (the peer shut its side; hang-ups and
// errors are always reported), and one goroutine waiting on it. A watch
// costs a map entry and the kernel's registration, not a goroutine or a
// timer, so open idle streams stay cheap; pipelined request bytes wake
// nothing. The goroutine starts with the first watch and stops at close.
type disconnectWatcher struct {
	epfd  int
	count func(route, phase string)

	mu      sync.Mutex
	byID    map[uint64]*clientWatch
	nextID  uint64
	started bool
	closed  bool
	done    chan struct{}
}

// watchReg is a watch's registration: the socket, and the id its events
// carry (never reused, so a late event cannot reach a later watch of a
// reused descriptor).
type watchReg struct {
	raw syscall.RawConn
	id  uint64
}

// epollOneShot is EPOLLONESHOT (syscall spells it as a negative int).
const epollOneShot = 1 << 30

// newDisconnectWatcher returns a watcher that calls count for every client
// it finds gone; nil when epoll is unavailable.
func newDisconnectWatcher(count func(route, phase string)) *disconnectWatcher {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	return &disconnectWatcher{epfd: epfd, count: count, byID: map[uint64]*clientWatch{}, done: make(chan struct{})}
}

// watch registers c; nil when c is not a socket or the watcher is closed.
func (d *disconnectWatcher) watch(c net.Conn, route string) *clientWatch {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.nextID++
	w := &clientWatch{d: d, route: route, phase: phaseWaitingUpstream, reg: watchReg{raw: raw, id: d.nextID}}
	var addErr error
	err = raw.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | epollOneShot, Fd: int32(uint32(w.reg.id)), Pad: int32(uint32(w.reg.id >> 32))}
		addErr = syscall.EpollCtl(d.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || addErr != nil {
		return nil
	}
	d.byID[w.reg.id] = w
	if !d.started {
		d.started = true
		go d.run()
	}
	return w
}

// unwatch removes w's registration. A connection already closed has none
// left (the kernel drops it with the socket), and Control then fails
// without touching the descriptor, which may belong to another socket by
// now.
func (d *disconnectWatcher) unwatch(w *clientWatch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byID, w.reg.id)
	if d.closed {
		return
	}
	_ = w.reg.raw.Control(func(fd uintptr) {
		_ = syscall.EpollCtl(d.epfd, syscall.EPOLL_CTL_DEL, int(fd), &syscall.EpollEvent{})
	})
}

// run waits for closed peers and fires their watches.
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
			if w := d.byID[id]; w != nil {
				fire = append(fire, w)
			}
		}
		d.mu.Unlock()
		for _, w := range fire {
			w.fire()
		}
		clear(fire)
	}
}

// close stops the watcher; watches still open stop watching.
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
