package state

import (
	"container/list"
	"context"
	"fmt"
	"time"
)

var _ EditJournal = (*Memory)(nil)

// sessionJournal is one session's edit journal in the memory store.
type sessionJournal struct {
	key        Key
	last       int64        // the last Seq given
	recs       []EditRecord // oldest first (by Seq)
	appendedAt time.Time
	el         *list.Element // in Memory.jnOrder; front = most recently appended
}

// AppendEdits implements EditJournal. A session's journal lives TTL after
// its last append; at most MaxSessions journals are kept, the least
// recently appended evicted first. keep <= 0 means DefaultEditKeep.
func (m *Memory) AppendEdits(ctx context.Context, key Key, keep int, recs []EditRecord) ([]EditRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: append edits: %w", err)
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	if m.isClosed() {
		return nil, ErrClosed
	}
	if len(recs) == 0 {
		return []EditRecord{}, nil
	}
	now := m.clock()
	m.jnMu.Lock()
	defer m.jnMu.Unlock()
	j := m.liveJournalLocked(key, now)
	if j == nil {
		j = &sessionJournal{key: key}
		j.el = m.jnOrder.PushFront(j)
		m.journals[key] = j
		for len(m.journals) > m.maxSessions {
			m.dropJournalLocked(m.jnOrder.Back().Value.(*sessionJournal))
		}
	} else {
		m.jnOrder.MoveToFront(j.el)
	}
	j.appendedAt = now
	out := make([]EditRecord, len(recs))
	paths := make(map[string]bool, len(recs))
	for i, rec := range recs {
		paths[rec.Path] = true
		j.last++
		stored := storedEdit(rec, j.last, now)
		j.recs = append(j.recs, stored)
		out[i] = cloneEdit(stored)
	}
	j.trim(paths, editKeep(keep))
	return out, nil
}

// trim keeps the newest keep entries of each of paths (those just
// appended to) and the newest MaxEditsPerSession overall.
func (j *sessionJournal) trim(paths map[string]bool, keep int) {
	perPath := map[string]int{}
	kept := make([]bool, len(j.recs))
	n := 0
	for i := len(j.recs) - 1; i >= 0; i-- {
		p := j.recs[i].Path
		if (!paths[p] || perPath[p] < keep) && n < MaxEditsPerSession {
			perPath[p]++
			kept[i] = true
			n++
		}
	}
	if n == len(j.recs) {
		return
	}
	out := make([]EditRecord, 0, n)
	for i, rec := range j.recs {
		if kept[i] {
			out = append(out, rec)
		}
	}
	j.recs = out
}

// SetEditStatus implements EditJournal. It counts the entries of callID
// it set, whether or not their status was already status.
func (m *Memory) SetEditStatus(ctx context.Context, key Key, callID, status, reason string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("state: set edit status: %w", err)
	}
	if !key.Valid() {
		return 0, ErrInvalidKey
	}
	if err := checkEditStatus(status); err != nil {
		return 0, err
	}
	if m.isClosed() {
		return 0, ErrClosed
	}
	if callID == "" {
		return 0, nil
	}
	m.jnMu.Lock()
	defer m.jnMu.Unlock()
	j := m.liveJournalLocked(key, m.clock())
	if j == nil {
		return 0, nil
	}
	n := 0
	for i := range j.recs {
		if j.recs[i].CallID == callID {
			j.recs[i].Status, j.recs[i].Reason = status, reason
			n++
		}
	}
	return n, nil
}

// Edits implements EditJournal.
func (m *Memory) Edits(ctx context.Context, key Key, path string) ([]EditRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: edits: %w", err)
	}
	if !key.Valid() {
		return nil, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	if m.isClosed() {
		return nil, ErrClosed
	}
	m.jnMu.Lock()
	defer m.jnMu.Unlock()
	out := []EditRecord{}
	j := m.liveJournalLocked(key, m.clock())
	if j == nil {
		return out, nil
	}
	for _, rec := range j.recs {
		if path == "" || rec.Path == path {
			out = append(out, cloneEdit(rec))
		}
	}
	return out, nil
}

// Edit implements EditJournal.
func (m *Memory) Edit(ctx context.Context, key Key, seq int64) (EditRecord, error) {
	if err := ctx.Err(); err != nil {
		return EditRecord{}, fmt.Errorf("state: edit: %w", err)
	}
	if !key.Valid() {
		return EditRecord{}, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	if m.isClosed() {
		return EditRecord{}, ErrClosed
	}
	m.jnMu.Lock()
	defer m.jnMu.Unlock()
	if j := m.liveJournalLocked(key, m.clock()); j != nil {
		for _, rec := range j.recs {
			if rec.Seq == seq {
				return cloneEdit(rec), nil
			}
		}
	}
	return EditRecord{}, fmt.Errorf("state: edit %d: %w", seq, ErrNotFound)
}

// liveJournalLocked returns key's journal, nil when it has none or it
// expired (an expired one is dropped).
func (m *Memory) liveJournalLocked(key Key, now time.Time) *sessionJournal {
	j := m.journals[key]
	if j != nil && !now.Before(j.appendedAt.Add(m.ttl)) {
		m.dropJournalLocked(j)
		return nil
	}
	return j
}

func (m *Memory) dropJournalLocked(j *sessionJournal) {
	m.jnOrder.Remove(j.el)
	delete(m.journals, j.key)
}

// dropJournal removes key's journal (Delete and eviction of the session).
func (m *Memory) dropJournal(key Key) {
	m.jnMu.Lock()
	defer m.jnMu.Unlock()
	if j := m.journals[key]; j != nil {
		m.dropJournalLocked(j)
	}
}

// purgeJournals drops the expired journals, least recently appended
// first, stopping at the first live one.
func (m *Memory) purgeJournals(now time.Time) {
	m.jnMu.Lock()
	defer m.jnMu.Unlock()
	for el := m.jnOrder.Back(); el != nil; el = m.jnOrder.Back() {
		j := el.Value.(*sessionJournal)
		if now.Before(j.appendedAt.Add(m.ttl)) {
			return
		}
		m.dropJournalLocked(j)
	}
}
