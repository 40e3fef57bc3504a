package proxy

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/state"
)

// sessionRecorder records that a session made a request (request count, last
// seen) off the request path: touches are queued and written by one owned
// worker with its own timeout, so a slow state store never delays a reply.
// When the queue is full a touch is dropped and counted.
type sessionRecorder struct {
	store   state.Store
	log     *zap.Logger
	metrics *Metrics
	timeout time.Duration
	queue   chan sessionTouch
	done    chan struct{}

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
}

type sessionTouch struct {
	key state.Key
	// effect, when set, is applied instead of counting a request (apply).
	effect func(*state.Session)
}

func newSessionRecorder(st state.Store, log *zap.Logger, m *Metrics, timeout time.Duration) *sessionRecorder {
	if timeout <= 0 {
		timeout = time.Second
	}
	r := &sessionRecorder{
		store: st, log: log, metrics: m, timeout: timeout,
		queue: make(chan sessionTouch, 4096),
		done:  make(chan struct{}),
	}
	go r.run()
	return r
}

// touch queues a request count for key; it never blocks.
func (r *sessionRecorder) touch(key state.Key) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.queue <- sessionTouch{key: key}:
	default:
		r.metrics.StoreError("touch_dropped")
	}
}

// apply queues a change of key's session (a routing decision of a request
// no turn runs on); it never blocks, and counts no request.
func (r *sessionRecorder) apply(key state.Key, fx func(*state.Session)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.queue <- sessionTouch{key: key, effect: fx}:
	default:
		r.metrics.StoreError("touch_dropped")
	}
}

func (r *sessionRecorder) run() {
	defer close(r.done)
	batch := make([]sessionTouch, 0, maxTouchBatch)
	wait := time.NewTimer(touchBatchDelay)
	wait.Stop()
	for t := range r.queue {
		// The touches of the next touchBatchDelay go with this one: a busy
		// proxy's sessions each get one store update per batch, however
		// many requests they made in it (pprof, small requests with the
		// features off: the worker woke and updated a session per
		// request, 7 % of the CPU).
		batch = append(batch[:0], t)
		wait.Reset(touchBatchDelay)
	gather:
		for len(batch) < maxTouchBatch {
			select {
			case t, ok := <-r.queue:
				if !ok {
					break gather
				}
				batch = append(batch, t)
			case <-wait.C:
				break gather
			}
		}
		wait.Stop()
		r.write(batch)
		clear(batch)
	}
}

// maxTouchBatch bounds the touches the worker gathers into one batch;
// touchBatchDelay is how long it lets them gather after the first.
const (
	maxTouchBatch   = 1024
	touchBatchDelay = 20 * time.Millisecond
)

// write applies batch with one store update per session (sessions in the
// order of their first touch), each session's touches in queue order: on
// a busy proxy many touches of one session wait together, and one update
// stands for all of them.
func (r *sessionRecorder) write(batch []sessionTouch) {
	var order []state.Key
	byKey := make(map[state.Key][]sessionTouch, 16)
	for _, t := range batch {
		if _, ok := byKey[t.key]; !ok {
			order = append(order, t.key)
		}
		byKey[t.key] = append(byKey[t.key], t)
	}
	for _, key := range order {
		touches := byKey[key]
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		_, err := r.store.Update(ctx, key, func(s *state.Session) error {
			for _, t := range touches {
				if t.effect != nil {
					t.effect(s)
				} else {
					s.Requests++
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			r.metrics.StoreError("update")
			r.log.Warn("recording session failed", zap.String("session", key.Session), zap.Error(err))
		}
	}
}

// close stops accepting touches and waits up to grace for the queue to drain.
func (r *sessionRecorder) close(grace time.Duration) {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(grace):
		r.log.Warn("session writes still pending at shutdown", zap.Int("pending", len(r.queue)))
	}
}
