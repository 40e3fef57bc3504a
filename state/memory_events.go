package state

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
)

var _ EventLog = (*Memory)(nil)

// eventRing is a bounded log: the newest max records, oldest first, and
// the last id it assigned.
type eventRing struct {
	recs []ringRecord // ring once full: recs[head] is the oldest
	head int
	max  int
	last eventID
}

// add appends data under the next id at unix millisecond ms, overwriting
// the oldest record when the ring is full. data is kept as it is: the
// caller's copy, which nothing changes (a session's ring and the global
// ring share it).
func (r *eventRing) add(ms uint64, data []byte) {
	r.last = r.last.next(ms)
	rec := ringRecord{id: r.last, data: data}
	if len(r.recs) < r.max {
		r.recs = append(r.recs, rec)
		return
	}
	r.recs[r.head] = rec
	r.head = (r.head + 1) % r.max
}

// ringRecord is a record: its id (written out when read) and its data.
type ringRecord struct {
	id   eventID
	data []byte
}

func (r *eventRing) at(i int) ringRecord { return r.recs[(r.head+i)%len(r.recs)] }

// after returns copies of the records after id after ("" for all), oldest
// first, at most limit. after must be "" or well-formed (checkAfter).
func (r *eventRing) after(after string, limit int) []EventRecord {
	n := len(r.recs)
	start := 0
	if id, ok := parseEventID(after); ok {
		start = sort.Search(n, func(i int) bool { return r.at(i).id.compare(id) > 0 })
	}
	out := make([]EventRecord, 0, min(limit, n-start))
	for i := start; i < n && len(out) < limit; i++ {
		rec := r.at(i)
		out = append(out, EventRecord{ID: rec.id.String(), Data: slices.Clone(rec.data)})
	}
	return out
}

// sessionEvents is one session's log in the memory store.
type sessionEvents struct {
	key        Key
	ring       eventRing
	appendedAt time.Time
	el         *list.Element // in Memory.evOrder; front = most recently appended
}

// AppendEvents implements EventLog. A session's log lives TTL after its
// last append; at most MaxSessions session logs are kept, the least
// recently appended evicted first.
func (m *Memory) AppendEvents(ctx context.Context, key Key, recs [][]byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: append events: %w", err)
	}
	if !key.Valid() {
		return ErrInvalidKey
	}
	if m.isClosed() {
		return ErrClosed
	}
	if len(recs) == 0 {
		return nil
	}
	now := m.clock()
	ms := uint64(max(now.UnixMilli(), 0))
	m.evMu.Lock()
	defer m.evMu.Unlock()
	log := m.liveLogLocked(key, now)
	if log == nil {
		log = &sessionEvents{key: key, ring: eventRing{max: m.eventsPerSession}}
		log.el = m.evOrder.PushFront(log)
		m.evLogs[key] = log
		for len(m.evLogs) > m.maxSessions {
			m.dropLogLocked(m.evOrder.Back().Value.(*sessionEvents))
		}
	} else {
		m.evOrder.MoveToFront(log.el)
	}
	log.appendedAt = now
	for _, data := range recs {
		data = slices.Clone(data) // recs are the caller's (EventLog)
		log.ring.add(ms, data)
		m.evGlobal.add(ms, data)
	}
	return nil
}

// SessionEvents implements EventLog.
func (m *Memory) SessionEvents(ctx context.Context, key Key, after string, limit int) ([]EventRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: session events: %w", err)
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	if err := checkAfter(after); err != nil {
		return nil, err
	}
	if m.isClosed() {
		return nil, ErrClosed
	}
	m.evMu.Lock()
	defer m.evMu.Unlock()
	log := m.liveLogLocked(key, m.clock())
	if log == nil {
		return []EventRecord{}, nil
	}
	return log.ring.after(after, eventLimit(limit)), nil
}

// AllEvents implements EventLog.
func (m *Memory) AllEvents(ctx context.Context, after string, limit int) ([]EventRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: all events: %w", err)
	}
	if err := checkAfter(after); err != nil {
		return nil, err
	}
	if m.isClosed() {
		return nil, ErrClosed
	}
	m.evMu.Lock()
	defer m.evMu.Unlock()
	return m.evGlobal.after(after, eventLimit(limit)), nil
}

// liveLogLocked returns key's log, nil when it has none or it expired (an
// expired one is dropped).
func (m *Memory) liveLogLocked(key Key, now time.Time) *sessionEvents {
	log := m.evLogs[key]
	if log != nil && !now.Before(log.appendedAt.Add(m.ttl)) {
		m.dropLogLocked(log)
		return nil
	}
	return log
}

func (m *Memory) dropLogLocked(log *sessionEvents) {
	m.evOrder.Remove(log.el)
	delete(m.evLogs, log.key)
}

// dropEvents removes key's log (Delete and eviction of the session).
func (m *Memory) dropEvents(key Key) {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	if log := m.evLogs[key]; log != nil {
		m.dropLogLocked(log)
	}
}

// purgeEvents drops the expired session logs, least recently appended
// first, stopping at the first live one.
func (m *Memory) purgeEvents(now time.Time) {
	m.evMu.Lock()
	defer m.evMu.Unlock()
	for el := m.evOrder.Back(); el != nil; el = m.evOrder.Back() {
		log := el.Value.(*sessionEvents)
		if now.Before(log.appendedAt.Add(m.ttl)) {
			return
		}
		m.dropLogLocked(log)
	}
}
