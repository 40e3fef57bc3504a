// Package feed is the store-facing side of the live event feed: the
// Publisher, which takes events from the request path without ever
// blocking it and appends them to the state store's event log in the
// background, and Follow, which replays a log after a cursor and then
// follows it live (local wake-ups, plus polling so that events another
// replica appended appear too).
//
// Package events (a leaf) holds the contract producers emit to; this
// package may import the store.
package feed

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
)

// Defaults of Options.
const (
	DefaultQueue         = 4096
	DefaultAppendTimeout = 2 * time.Second
	DefaultBatch         = 20 * time.Millisecond
)

// maxEncodingBuffer is the largest encoding buffer a flush keeps for the
// next one: a busy proxy's 20 ms batch holds hundreds of requests' events
// (~350 bytes each), and a buffer regrown from nothing every flush was
// most of the feed's allocations.
const maxEncodingBuffer = 4 << 20

// Reasons an event is dropped (label reason of shepherd_events_dropped_total).
const (
	DropQueueFull    = "queue_full"    // the queue was full: its oldest event made room
	DropAppendFailed = "append_failed" // the store refused or timed out
	DropNoSession    = "no_session"    // the event names no valid session key
	DropClosed       = "closed"        // emitted after Close
)

// Options configure a Publisher. Log is required.
type Options struct {
	// Log is the store's event log the events are appended to.
	Log state.EventLog
	// Queue bounds the events waiting to be appended (<= 0: DefaultQueue).
	// A full queue drops its oldest event.
	Queue int
	// AppendTimeout bounds each append (one per session per batch; <= 0:
	// DefaultAppendTimeout).
	AppendTimeout time.Duration
	// Batch is how long the publisher lets events gather after the first
	// one is queued before it appends them (<= 0: DefaultBatch). Waking
	// once per batch rather than per event keeps the feed's cost on a busy
	// proxy to the encoding (measured: waking per event cost a third of
	// the small-request throughput on one core).
	Batch time.Duration
	// Metrics registers shepherd_events_dropped_total and
	// shepherd_events_published_total (nil: not registered).
	Metrics prometheus.Registerer
	// Logger logs failed appends (nil: nothing).
	Logger *zap.Logger
}

// Publisher is an events.Emitter that keeps the feed off the request
// path: Emit puts the event in a bounded queue and returns; one background
// goroutine encodes the queued events to JSON, appends them to the log in
// one call per session, and then wakes the local followers (Changed).
// Build it with New, stop it with Close. It is safe for concurrent use.
type Publisher struct {
	log     state.EventLog
	timeout time.Duration
	batch   time.Duration
	logger  *zap.Logger

	mu       sync.Mutex
	queue    []events.Event // ring: queue[head] is the oldest of n
	head, n  int
	closed   bool
	closeCtx context.Context // Close's, bounding the last flush
	changed  chan struct{}   // closed and replaced after each flush

	enc []byte // flush's encoding buffer (the loop goroutine's)

	kick chan struct{} // cap 1: something was queued
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the loop returned

	dropped   *prometheus.CounterVec
	dropFull  prometheus.Counter // dropped{reason="queue_full"}, resolved once
	published prometheus.Counter
}

var _ events.Emitter = (*Publisher)(nil)

// New builds a Publisher and starts its goroutine. It fails only when the
// metrics cannot be registered.
func New(o Options) (*Publisher, error) {
	if o.Log == nil {
		return nil, errors.New("feed: Options.Log is required")
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.AppendTimeout <= 0 {
		o.AppendTimeout = DefaultAppendTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	p := &Publisher{
		log: o.Log, timeout: o.AppendTimeout, batch: o.Batch, logger: o.Logger,
		queue:   make([]events.Event, o.Queue),
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_events_dropped_total",
			Help: "Feed events dropped, by reason: queue_full (the oldest queued event made room), append_failed, no_session, closed.",
		}, []string{"reason"}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_events_published_total",
			Help: "Feed events appended to the state store's event log.",
		}),
	}
	for _, r := range []string{DropQueueFull, DropAppendFailed, DropNoSession, DropClosed} {
		p.dropped.WithLabelValues(r)
	}
	p.dropFull = p.dropped.WithLabelValues(DropQueueFull)
	if o.Metrics != nil {
		for _, c := range []prometheus.Collector{p.dropped, p.published} {
			if err := o.Metrics.Register(c); err != nil {
				return nil, errors.Join(errors.New("feed: registering metrics"), err)
			}
		}
	}
	go p.loop()
	return p, nil
}

// Emit implements events.Emitter: it queues ev and returns at once. A full
// queue drops its oldest event (counted); after Close ev is dropped.
// ev.Data and ev.Fields must not be changed after Emit.
func (p *Publisher) Emit(ev events.Event) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.dropped.WithLabelValues(DropClosed).Inc()
		return
	}
	size := len(p.queue)
	if p.n == size {
		p.queue[p.head] = events.Event{}
		p.head = (p.head + 1) % size
		p.n--
		p.dropFull.Inc()
	}
	p.queue[(p.head+p.n)%size] = ev
	p.n++
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Changed returns a channel closed at the next flush that appended
// events. Take it before reading the log, so no append is missed.
func (p *Publisher) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Close stops taking events, appends those still queued within ctx's
// deadline, and stops the goroutine. It returns ctx's error when the
// deadline came first (the events left are lost). Close is idempotent.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed, p.closeCtx = true, ctx
		close(p.stop)
	}
	p.mu.Unlock()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop appends what is queued a batch time after something was, and the
// rest once Close was called.
func (p *Publisher) loop() {
	defer close(p.done)
	gather := time.NewTimer(p.batch)
	gather.Stop()
	for {
		select {
		case <-p.kick:
			gather.Reset(p.batch)
			select {
			case <-gather.C:
				p.flush(context.Background())
				continue
			case <-p.stop:
				gather.Stop()
			}
			p.finish()
			return
		case <-p.stop:
			p.finish()
			return
		}
	}
}

// finish appends what is left within Close's deadline.
func (p *Publisher) finish() {
	p.mu.Lock()
	ctx := p.closeCtx
	p.mu.Unlock()
	p.flush(ctx)
}

// take empties the queue, oldest first.
func (p *Publisher) take() []events.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]events.Event, p.n)
	for i := range out {
		j := (p.head + i) % len(p.queue)
		out[i] = p.queue[j]
		p.queue[j] = events.Event{}
	}
	p.head, p.n = 0, 0
	return out
}

// batch is the encoded events of one session, in emission order: spans of
// the publisher's encoding buffer until every event is encoded.
type batch struct {
	key   state.Key
	spans [][2]int
	recs  [][]byte
}

// flush appends every queued event, one append per session (sessions in
// the order of their first event), then wakes the followers. It runs on
// the loop's goroutine only: the encoding buffer is its own, reused from
// flush to flush (the log copies what it keeps, state.EventLog).
func (p *Publisher) flush(parent context.Context) {
	evs := p.take()
	if len(evs) == 0 {
		return
	}
	var order []*batch
	bySession := map[state.Key]*batch{}
	buf := p.enc[:0]
	for i := range evs {
		ev := &evs[i]
		key := state.Key{Tenant: ev.Tenant, Session: ev.Session}
		if !key.Valid() {
			p.dropped.WithLabelValues(DropNoSession).Inc()
			continue
		}
		ev.ID = "" // assigned by the log
		start := len(buf)
		var err error
		if buf, err = appendEvent(buf, ev); err != nil {
			// Data held something JSON cannot encode: the event is kept
			// without it rather than lost.
			p.logger.Warn("feed: event data not encodable; kept without data", zap.String("type", string(ev.Type)), zap.Error(err))
			ev.Data, ev.Fields = nil, nil
			if buf, err = appendEvent(buf[:start], ev); err != nil {
				buf = buf[:start]
				continue
			}
		}
		bt := bySession[key]
		if bt == nil {
			bt = &batch{key: key}
			bySession[key] = bt
			order = append(order, bt)
		}
		bt.spans = append(bt.spans, [2]int{start, len(buf)})
	}
	if cap(buf) <= maxEncodingBuffer {
		p.enc = buf
	} else {
		p.enc = nil // a burst's buffer is not kept
	}
	for _, bt := range order {
		bt.recs = make([][]byte, len(bt.spans))
		for i, sp := range bt.spans {
			bt.recs[i] = buf[sp[0]:sp[1]:sp[1]]
		}
	}
	appended := 0
	for _, bt := range order {
		ctx, cancel := context.WithTimeout(parent, p.timeout)
		err := p.log.AppendEvents(ctx, bt.key, bt.recs)
		cancel()
		if err != nil {
			p.dropped.WithLabelValues(DropAppendFailed).Add(float64(len(bt.recs)))
			p.logger.Warn("feed: appending events failed; they are lost", zap.Int("events", len(bt.recs)), zap.Error(err))
			continue
		}
		appended += len(bt.recs)
	}
	if appended == 0 {
		return
	}
	p.published.Add(float64(appended))
	p.mu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}
