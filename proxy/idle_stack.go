package proxy

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// offStack runs h on helper goroutines and waits for it.
//
// A stream's writer runs on the client connection's goroutine (streamBody)
// for as long as the stream is open, mostly parked waiting for the upstream's
// next event. Go grows a goroutine's stack to the deepest point it ever
// reached and shrinks it (at a garbage collection) only once less than a
// quarter of it is in use. With hooks, the request side (parsing the full
// request, the hook chain, the turn engine's edits) goes deep enough to grow
// the connection goroutine's stack to 16 KB, and a parked stream uses more
// than 4 KB of it, so every open stream would keep 16 KB of stack for its
// whole life. Run on a helper, the request side's deep stack stays with the
// helper, which serves the next request once this one's headers are
// decided, and the connection goroutine keeps the 8 KB a parked stream
// needs.
//
// Helpers are reused (a new goroutine would grow a fresh stack for every
// request: ~6 µs, against ~1 µs for the hand-off). Few wait idle, and not
// for long, as each keeps its grown stack meanwhile: at most offStackMaxIdle
// of them, for offStackIdle. The server uses offStack only when some hook
// chain runs.
//
// h must not keep using ctx after it returns (fasthttp's rule for every
// handler); the hand-off orders everything h did before the connection
// goroutine goes on.
func offStack(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return newOffStackPool(h, offStackIdle, offStackMaxIdle).serve
}

const (
	// offStackIdle is how long an idle helper waits for work before it
	// stops.
	offStackIdle = 2 * time.Second
	// offStackMaxIdle is the most helpers kept waiting for work; a helper
	// that finds that many already waiting stops.
	offStackMaxIdle = 32
)

// offStackPool is offStack's helpers: the idle ones in the order they were
// last used (most recent last).
type offStackPool struct {
	h       fasthttp.RequestHandler
	idleFor time.Duration
	maxIdle int

	mu    sync.Mutex
	idle  []*offStackWorker
	clean *time.Timer // armed while helpers are idle

	started, stopped atomic.Int64 // helpers (tests)
}

type offStackWorker struct {
	ctxs     chan *fasthttp.RequestCtx // closed to stop the helper
	done     chan struct{}
	lastUsed time.Time
}

func newOffStackPool(h fasthttp.RequestHandler, idleFor time.Duration, maxIdle int) *offStackPool {
	return &offStackPool{h: h, idleFor: idleFor, maxIdle: maxIdle}
}

// serve runs the handler on a helper and returns when it has returned.
func (p *offStackPool) serve(ctx *fasthttp.RequestCtx) {
	w := p.get()
	w.ctxs <- ctx
	<-w.done
	p.put(w)
}

func (p *offStackPool) get() *offStackWorker {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return w
	}
	p.mu.Unlock()
	w := &offStackWorker{ctxs: make(chan *fasthttp.RequestCtx), done: make(chan struct{})}
	p.started.Add(1)
	go p.work(w)
	return w
}

func (p *offStackPool) work(w *offStackWorker) {
	defer p.stopped.Add(1)
	for ctx := range w.ctxs {
		p.h(ctx)
		w.done <- struct{}{}
	}
}

func (p *offStackPool) put(w *offStackWorker) {
	p.mu.Lock()
	if len(p.idle) >= p.maxIdle {
		p.mu.Unlock()
		close(w.ctxs)
		return
	}
	w.lastUsed = time.Now()
	p.idle = append(p.idle, w)
	if p.clean == nil {
		p.clean = time.AfterFunc(p.idleFor, p.stopIdle)
	}
	p.mu.Unlock()
}

// stopIdle stops the helpers idle for idleFor or longer (the oldest come
// first) and runs again while some remain idle.
func (p *offStackPool) stopIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].lastUsed) >= p.idleFor {
		close(p.idle[n].ctxs)
		p.idle[n] = nil
		n++
	}
	p.idle = slices.Delete(p.idle, 0, n)
	if len(p.idle) == 0 {
		p.clean = nil
		return
	}
	p.clean.Reset(p.idleFor - now.Sub(p.idle[0].lastUsed))
}

// runsHooks reports whether some API's hook chain has hooks.
func (f *Features) runsHooks() bool {
	for _, api := range wireAPIs {
		if !f.chain(api).Empty() {
			return true
		}
	}
	return false
}
