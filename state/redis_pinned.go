package state

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"
)

// pinnedSessions is the Redis store's copy of the sessions this process
// wrote last (RedisOptions.PinnedSessions). When each session's requests
// reach one process (a single replica, a sidecar, or a load balancer that
// pins sessions), that copy is what Redis holds, so Get answers from it
// without a round trip and a turn makes one: the save.
//
// The copy is never trusted for a write. Every save stays a compare-and-set
// against the version the copy carries; when another process wrote the
// session meanwhile, the set fails, the update is applied again to the
// session read from Redis (Update), and the miss is counted as stale: that
// request was rewritten from an older session than Redis had, which is what
// pinning must rule out.
//
// Entries are the sessions as stored (after a successful write), never
// handed out: Get returns a clone. They expire with the session's TTL
// (counted from UpdatedAt, as Redis counts it from the write) and the least
// recently used goes first beyond max. A failed or ambiguous write drops the
// entry, so the next Get reads Redis.
type pinnedSessions struct {
	max int
	ttl time.Duration

	mu    sync.Mutex
	byKey map[Key]*list.Element // of *pinnedEntry
	lru   list.List             // front: most recently used

	hits, misses, stale atomic.Int64
}

type pinnedEntry struct {
	key Key
	s   *Session // as stored; read-only
}

func newPinnedSessions(max int, ttl time.Duration) *pinnedSessions {
	return &pinnedSessions{max: max, ttl: ttl, byKey: make(map[Key]*list.Element)}
}

// get returns the caller's own copy of key's session, or nil when there is
// no live entry (counted as a miss).
func (p *pinnedSessions) get(key Key, now time.Time) *Session {
	p.mu.Lock()
	el, ok := p.byKey[key]
	if ok && now.Sub(el.Value.(*pinnedEntry).s.UpdatedAt) >= p.ttl {
		p.removeLocked(el)
		ok = false
	}
	if !ok {
		p.mu.Unlock()
		p.misses.Add(1)
		return nil
	}
	p.lru.MoveToFront(el)
	s := el.Value.(*pinnedEntry).s
	p.mu.Unlock()
	p.hits.Add(1)
	return s.clone()
}

// put records s, just written under key, in place of any older entry.
// s is copied; the caller keeps its own.
func (p *pinnedSessions) put(key Key, s *Session) {
	c := s.clone()
	c.counters = nil // read with a Get, not kept: counters change outside the session
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byKey[key]; ok {
		e := el.Value.(*pinnedEntry)
		if e.s.Version > c.Version {
			return // a later write of this process already landed
		}
		e.s = c
		p.lru.MoveToFront(el)
		return
	}
	p.byKey[key] = p.lru.PushFront(&pinnedEntry{key: key, s: c})
	for p.lru.Len() > p.max {
		p.removeLocked(p.lru.Back())
	}
}

// drop forgets key's session (deleted, or a write whose outcome is unknown).
func (p *pinnedSessions) drop(key Key) {
	p.mu.Lock()
	if el, ok := p.byKey[key]; ok {
		p.removeLocked(el)
	}
	p.mu.Unlock()
}

func (p *pinnedSessions) removeLocked(el *list.Element) {
	delete(p.byKey, el.Value.(*pinnedEntry).key)
	p.lru.Remove(el)
}

// PinnedStats counts what the Redis store's pinned sessions did (see
// RedisOptions.PinnedSessions): loads answered from the copy (Hits) or from
// Redis (Misses), and saves that found the session written by another
// process since this one's copy or read (Stale).
type PinnedStats struct {
	Hits, Misses, Stale int64
}

// PinnedReporter is a store that keeps pinned sessions; ok is false when
// pinning is off.
type PinnedReporter interface {
	PinnedStats() (stats PinnedStats, ok bool)
}

// PinnedStats implements PinnedReporter.
func (r *Redis) PinnedStats() (PinnedStats, bool) {
	p := r.pinned
	if p == nil {
		return PinnedStats{}, false
	}
	return PinnedStats{Hits: p.hits.Load(), Misses: p.misses.Load(), Stale: p.stale.Load()}, true
}
