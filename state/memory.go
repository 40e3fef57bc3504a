package state

import (
	"container/list"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryOptions configures NewMemory. The zero value is usable.
type MemoryOptions struct {
	// MaxSessions bounds how many sessions are kept. When an Update creates a
	// session beyond the bound, expired sessions are purged and then the least
	// recently updated sessions are evicted. Default 10000; <= 0 means the
	// default.
	MaxSessions int
	// TTL is how long a session lives after its last Update. Default 24h;
	// <= 0 means the default.
	TTL time.Duration
	// JanitorInterval is how often a background goroutine purges expired
	// sessions. Default TTL/4 clamped to [1s, 1m]; 0 means the default and a
	// negative value disables the janitor (expired sessions are then still
	// invisible and are purged lazily by Get and by eviction).
	JanitorInterval time.Duration
	// Now is the clock; default time.Now. Tests inject a fake one.
	Now func() time.Time
	// EventsPerSession and EventsGlobal bound the event logs (EventLog):
	// the newest records kept per session and for all sessions. Defaults
	// DefaultEventsPerSession and DefaultEventsGlobal; <= 0 means the
	// default.
	EventsPerSession int
	EventsGlobal     int
}

// Memory defaults.
const (
	DefaultMaxSessions = 10000
	DefaultTTL         = 24 * time.Hour
)

// lockStripes is the number of per-key Update locks; keys share a stripe by
// hash.
const lockStripes = 256

// Memory is the embedded Store: a bounded in-process map. It is safe for
// concurrent use. It also implements EventLog (bounded rings per session and
// for all sessions, at most MaxSessions session logs), Approvals,
// EditJournal (at most MaxSessions journals) and Counters (at most
// MaxSessions sessions' counters); all are dropped with their
// session by Delete and by eviction.
//
// Stored sessions are immutable snapshots: Update clones the current one for
// fn and stores a clone of the result, Get hands out a clone, so callers
// never alias stored state. Update serialises per key with a lock held while
// fn runs; fn must therefore be quick and must not call the same store (that
// would deadlock until ctx ends, as unrelated keys can share the lock).
type Memory struct {
	maxSessions int
	ttl         time.Duration
	now         func() time.Time

	seed  maphash.Seed
	locks [lockStripes]chan struct{} // one-token semaphores, so waits honour ctx

	mu      sync.RWMutex
	entries map[Key]*list.Element // values are *Session
	order   *list.List            // front = most recently updated
	closed  bool

	// Event logs (memory_events.go); evMu is taken after mu, never before.
	eventsPerSession int
	evMu             sync.Mutex
	evLogs           map[Key]*sessionEvents
	evOrder          *list.List // of *sessionEvents, front = most recently appended
	evGlobal         eventRing

	// Approvals (memory_approvals.go); apMu is taken after mu, never before.
	apMu      sync.Mutex
	approvals map[Key]map[string]*Approval

	// Edit journals (memory_journal.go); jnMu is taken after mu, never
	// before.
	jnMu     sync.Mutex
	journals map[Key]*sessionJournal
	jnOrder  *list.List // of *sessionJournal, front = most recently appended

	// Budget counters (memory_counters.go); ctMu is taken after mu, never
	// before.
	ctMu     sync.Mutex
	counters map[Key]*sessionCounters
	ctOrder  *list.List // of *sessionCounters, front = most recently changed
	// prefetch: Get attaches the session's counters (PrefetchCounters).
	prefetch atomic.Bool

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store and, unless disabled, starts its
// janitor goroutine; Close stops it.
func NewMemory(opts MemoryOptions) *Memory {
	m := &Memory{
		maxSessions: opts.MaxSessions,
		ttl:         opts.TTL,
		now:         opts.Now,
		seed:        maphash.MakeSeed(),
		entries:     make(map[Key]*list.Element),
		order:       list.New(),
		evLogs:      make(map[Key]*sessionEvents),
		evOrder:     list.New(),
		approvals:   make(map[Key]map[string]*Approval),
		journals:    make(map[Key]*sessionJournal),
		jnOrder:     list.New(),
		counters:    make(map[Key]*sessionCounters),
		ctOrder:     list.New(),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),

		eventsPerSession: opts.EventsPerSession,
		evGlobal:         eventRing{max: opts.EventsGlobal},
	}
	if m.eventsPerSession <= 0 {
		m.eventsPerSession = DefaultEventsPerSession
	}
	if m.evGlobal.max <= 0 {
		m.evGlobal.max = DefaultEventsGlobal
	}
	if m.maxSessions <= 0 {
		m.maxSessions = DefaultMaxSessions
	}
	if m.ttl <= 0 {
		m.ttl = DefaultTTL
	}
	if m.now == nil {
		m.now = time.Now
	}
	for i := range m.locks {
		m.locks[i] = make(chan struct{}, 1)
	}
	interval := opts.JanitorInterval
	if interval == 0 {
		interval = min(max(m.ttl/4, time.Second), time.Minute)
	}
	if interval > 0 {
		go m.janitor(interval)
	} else {
		close(m.done)
	}
	return m
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key Key) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: get: %w", err)
	}
	if !key.Valid() {
		return nil, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	var cur *Session
	if el, ok := m.entries[key]; ok {
		cur = el.Value.(*Session)
	}
	m.mu.RUnlock()
	if cur == nil {
		return nil, ErrNotFound
	}
	if m.expired(cur, m.clock()) {
		m.removeIf(key, cur)
		return nil, ErrNotFound
	}
	out := cur.clone()
	if m.prefetch.Load() {
		out.counters = m.snapshotCounters(key)
	}
	return out, nil
}

// Update implements Store. fn runs exactly once, under the key's lock.
func (m *Memory) Update(ctx context.Context, key Key, fn func(*Session) error) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: update: %w", err)
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	unlock, err := m.lockKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("state: update: %w", err)
	}
	defer unlock()

	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	var cur *Session
	if el, ok := m.entries[key]; ok {
		cur = el.Value.(*Session)
	}
	m.mu.RUnlock()

	now := m.clock()
	var w *Session
	if cur != nil && !m.expired(cur, now) {
		w = cur.clone()
	} else {
		w = &Session{ID: key.Session, Tenant: key.Tenant, CreatedAt: now}
	}
	created, version, before := w.CreatedAt, w.Version, w.Usage
	if err := fn(w); err != nil {
		return nil, fmt.Errorf("state: update: %w", err)
	}
	ops := w.takeStaged(before)
	wrote := false
	defer func() { // after the store's locks below are released
		if wrote {
			landed(ops, w.Version)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: update: %w", err)
	}
	w.ID, w.Tenant, w.CreatedAt = key.Session, key.Tenant, created
	w.Version = version + 1
	w.UpdatedAt = m.clock()
	stored := w.clone()

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	// The key's lock is held: the counters change with the write, before
	// any other update of the session.
	m.commitOps(key, ops)
	wrote = true
	if el, ok := m.entries[key]; ok {
		el.Value = stored
		m.order.MoveToFront(el)
		return w, nil
	}
	m.entries[key] = m.order.PushFront(stored)
	if len(m.entries) > m.maxSessions {
		m.purgeLocked(stored.UpdatedAt)
	}
	for len(m.entries) > m.maxSessions {
		evicted := m.removeLocked(m.order.Back())
		m.dropEvents(evicted)
		m.dropApprovals(evicted)
		m.dropJournal(evicted)
		m.dropCounters(evicted)
	}
	return w, nil
}

// Delete implements Store. Deleting a missing session is not an error.
func (m *Memory) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: delete: %w", err)
	}
	if !key.Valid() {
		return nil
	}
	unlock, err := m.lockKey(ctx, key)
	if err != nil {
		return fmt.Errorf("state: delete: %w", err)
	}
	defer unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if el, ok := m.entries[key]; ok {
		m.removeLocked(el)
	}
	m.dropEvents(key)
	m.dropApprovals(key)
	m.dropJournal(key)
	m.dropCounters(key)
	return nil
}

// List implements Store. Order is by UpdatedAt, newest first.
func (m *Memory) List(ctx context.Context, tenant string, limit int) ([]Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: list: %w", err)
	}
	limit = listLimit(limit)
	now := m.clock()
	var out []Summary
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	// The order list is in update order, which is UpdatedAt order unless the
	// clock went backwards; the sort below covers that for the collected page.
	for el := m.order.Front(); el != nil && len(out) < limit; el = el.Next() {
		s := el.Value.(*Session)
		if (tenant == "" || s.Tenant == tenant) && !m.expired(s, now) {
			out = append(out, summarize(s))
		}
	}
	m.mu.RUnlock()
	slices.SortStableFunc(out, func(a, b Summary) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

// Ping implements Store: it fails only after Close or with a done ctx.
func (m *Memory) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: ping: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

// Close stops the janitor and drops every session. Later calls of any method
// return ErrClosed; Close itself is idempotent.
func (m *Memory) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.entries = make(map[Key]*list.Element)
		m.order.Init()
		m.evMu.Lock()
		m.evLogs, m.evGlobal.recs = make(map[Key]*sessionEvents), nil
		m.evOrder.Init()
		m.evMu.Unlock()
		m.apMu.Lock()
		m.approvals = make(map[Key]map[string]*Approval)
		m.apMu.Unlock()
		m.jnMu.Lock()
		m.journals = make(map[Key]*sessionJournal)
		m.jnOrder.Init()
		m.jnMu.Unlock()
		m.mu.Unlock()
		close(m.stop)
		<-m.done
	})
	return nil
}

// Len returns how many sessions are held, including expired ones not yet
// purged.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}

// isClosed reports whether Close was called.
func (m *Memory) isClosed() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.closed
}

// clock returns the current time in UTC without a monotonic reading, the
// form every stored timestamp takes (as after a JSON round trip).
func (m *Memory) clock() time.Time { return m.now().UTC().Round(0) }

func (m *Memory) expired(s *Session, now time.Time) bool {
	return !now.Before(s.UpdatedAt.Add(m.ttl))
}

// lockKey takes key's stripe lock, giving up when ctx ends.
func (m *Memory) lockKey(ctx context.Context, key Key) (unlock func(), err error) {
	l := m.locks[maphash.Comparable(m.seed, key)%lockStripes]
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// removeIf removes key if it still holds the snapshot s.
func (m *Memory) removeIf(key Key, s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[key]; ok && el.Value.(*Session) == s {
		m.removeLocked(el)
	}
}

// removeLocked removes a session and returns its key.
func (m *Memory) removeLocked(el *list.Element) Key {
	s := m.order.Remove(el).(*Session)
	key := Key{Tenant: s.Tenant, Session: s.ID}
	delete(m.entries, key)
	return key
}

// purgeLocked removes expired sessions, oldest first, stopping at the first
// live one (the order list is in update order).
func (m *Memory) purgeLocked(now time.Time) {
	for el := m.order.Back(); el != nil; el = m.order.Back() {
		if !m.expired(el.Value.(*Session), now) {
			return
		}
		m.removeLocked(el)
	}
}

func (m *Memory) janitor(interval time.Duration) {
	defer close(m.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			now := m.clock()
			m.mu.Lock()
			closed := m.closed
			if !closed {
				m.purgeLocked(now)
			}
			m.mu.Unlock()
			if !closed {
				m.purgeEvents(now)
				m.purgeApprovals(now)
				m.purgeJournals(now)
				m.purgeCounters(now)
			}
		}
	}
}
