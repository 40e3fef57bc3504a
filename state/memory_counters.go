package state

import (
	"container/list"
	"context"
	"fmt"
	"time"
)

var _ Counters = (*Memory)(nil)

// sessionCounters are one session's budget counters in the memory store.
type sessionCounters struct {
	key       Key
	values    map[string]int64
	sigs      map[string]string // the signature each streak last recorded
	changedAt time.Time
	el        *list.Element // in Memory.ctOrder; front = most recently changed
}

// Reserve implements Counters.
func (m *Memory) Reserve(ctx context.Context, key Key, name string, n, limit int64) (int64, bool, error) {
	var ok bool
	v, err := m.changeCounter(ctx, "reserve", key, func(c *sessionCounters) (int64, bool) {
		cur := c.values[name]
		if limit > 0 && cur+n > limit {
			return cur, false
		}
		ok = true
		c.values[name] = cur + n
		return cur + n, true
	})
	return v, ok, err
}

// Add implements Counters.
func (m *Memory) Add(ctx context.Context, key Key, name string, n int64) (int64, error) {
	return m.changeCounter(ctx, "add", key, func(c *sessionCounters) (int64, bool) {
		c.values[name] += n
		return c.values[name], true
	})
}

// Streak implements Counters.
func (m *Memory) Streak(ctx context.Context, key Key, name, sig string) (int64, error) {
	return m.changeCounter(ctx, "streak", key, func(c *sessionCounters) (int64, bool) {
		if last, ok := c.sigs[name]; ok && last == sig {
			c.values[name]++
		} else {
			c.sigs[name] = sig
			c.values[name] = 1
		}
		return c.values[name], true
	})
}

// ReadCounters implements Counters.
func (m *Memory) ReadCounters(ctx context.Context, key Key) (map[string]int64, error) {
	if err := m.counterCheck(ctx, "read counters", key); err != nil {
		return nil, err
	}
	m.ctMu.Lock()
	defer m.ctMu.Unlock()
	out := map[string]int64{}
	if c := m.liveCountersLocked(key, m.clock()); c != nil {
		for k, v := range c.values {
			out[k] = v
		}
	}
	return out, nil
}

func (m *Memory) counterCheck(ctx context.Context, op string, key Key) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: %s: %w", op, err)
	}
	if !key.Valid() {
		return ErrInvalidKey
	}
	if m.isClosed() {
		return ErrClosed
	}
	return nil
}

// changeCounter runs fn on key's counters (created when missing) under the
// counters lock and, when fn reports a change, refreshes their TTL. At most MaxSessions sessions'
// counters are kept, the least recently changed evicted first.
func (m *Memory) changeCounter(ctx context.Context, op string, key Key, fn func(*sessionCounters) (int64, bool)) (int64, error) {
	if err := m.counterCheck(ctx, op, key); err != nil {
		return 0, err
	}
	now := m.clock()
	m.ctMu.Lock()
	defer m.ctMu.Unlock()
	c := m.liveCountersLocked(key, now)
	if c == nil {
		c = &sessionCounters{key: key, values: map[string]int64{}, sigs: map[string]string{}, changedAt: now}
		c.el = m.ctOrder.PushFront(c)
		m.counters[key] = c
		for len(m.counters) > m.maxSessions {
			m.dropCountersLocked(m.ctOrder.Back().Value.(*sessionCounters))
		}
	}
	v, changed := fn(c)
	if changed {
		c.changedAt = now
		m.ctOrder.MoveToFront(c.el)
	}
	return v, nil
}

// liveCountersLocked returns key's counters, nil when it has none or they
// expired (expired ones are dropped).
func (m *Memory) liveCountersLocked(key Key, now time.Time) *sessionCounters {
	c := m.counters[key]
	if c != nil && !now.Before(c.changedAt.Add(m.ttl)) {
		m.dropCountersLocked(c)
		return nil
	}
	return c
}

func (m *Memory) dropCountersLocked(c *sessionCounters) {
	m.ctOrder.Remove(c.el)
	delete(m.counters, c.key)
}

// dropCounters removes key's counters (Delete and eviction of the session).
func (m *Memory) dropCounters(key Key) {
	m.ctMu.Lock()
	defer m.ctMu.Unlock()
	if c := m.counters[key]; c != nil {
		m.dropCountersLocked(c)
	}
}

// purgeCounters drops the expired counters, least recently changed first,
// stopping at the first live ones.
func (m *Memory) purgeCounters(now time.Time) {
	m.ctMu.Lock()
	defer m.ctMu.Unlock()
	for el := m.ctOrder.Back(); el != nil; el = m.ctOrder.Back() {
		c := el.Value.(*sessionCounters)
		if now.Before(c.changedAt.Add(m.ttl)) {
			return
		}
		m.dropCountersLocked(c)
	}
}

// PrefetchCounters implements CounterPrefetcher: Get attaches the
// session's counters from then on.
func (m *Memory) PrefetchCounters() { m.prefetch.Store(true) }

// snapshotCounters copies key's live counters (empty when none).
func (m *Memory) snapshotCounters(key Key) *CounterSnapshot {
	m.ctMu.Lock()
	defer m.ctMu.Unlock()
	snap := &CounterSnapshot{Values: map[string]int64{}, Sigs: map[string]string{}}
	if c := m.liveCountersLocked(key, m.clock()); c != nil {
		for k, v := range c.values {
			snap.Values[k] = v
		}
		for k, v := range c.sigs {
			snap.Sigs[k] = v
		}
	}
	return snap
}

// commitOps applies the counter changes staged on a session write of key,
// as the Redis save script does (Add, or a Streak step), refreshing their
// TTL. The caller holds key's update lock.
func (m *Memory) commitOps(key Key, ops []CounterOp) {
	if len(ops) == 0 {
		return
	}
	now := m.clock()
	m.ctMu.Lock()
	defer m.ctMu.Unlock()
	c := m.liveCountersLocked(key, now)
	if c == nil {
		c = &sessionCounters{key: key, values: map[string]int64{}, sigs: map[string]string{}}
		c.el = m.ctOrder.PushFront(c)
		m.counters[key] = c
		for len(m.counters) > m.maxSessions {
			m.dropCountersLocked(m.ctOrder.Back().Value.(*sessionCounters))
		}
	}
	for _, op := range ops {
		switch {
		case op.Sig == "" && op.N == 0: // as Redis: an add of 0 writes nothing
		case op.Sig == "":
			c.values[op.Name] += op.N
		case c.sigs[op.Name] == op.Sig:
			c.values[op.Name]++
		default:
			c.sigs[op.Name] = op.Sig
			c.values[op.Name] = 1
		}
	}
	c.changedAt = now
	m.ctOrder.MoveToFront(c.el)
}
