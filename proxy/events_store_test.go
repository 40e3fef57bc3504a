package proxy_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

// newEventStore is an in-memory store that keeps an event log.
//
// TODO(feed): the memory store's own EventLog lands with wip/store; until
// then a minimal log stands in (ids "<n>-0", nothing dropped).
func newEventStore() state.Store {
	return &eventStore{Store: state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour}),
		sessions: map[state.Key][]state.EventRecord{}}
}

type eventStore struct {
	state.Store
	mu       sync.Mutex
	n        int
	sessions map[state.Key][]state.EventRecord
	global   []state.EventRecord
}

func (l *eventStore) AppendEvents(_ context.Context, key state.Key, recs [][]byte) error {
	if !key.Valid() {
		return state.ErrInvalidKey
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		l.n++
		id := fmt.Sprintf("%d-0", l.n)
		l.sessions[key] = append(l.sessions[key], state.EventRecord{ID: id, Data: r})
		l.global = append(l.global, state.EventRecord{ID: id, Data: r})
	}
	return nil
}

func (l *eventStore) SessionEvents(_ context.Context, key state.Key, after string, limit int) ([]state.EventRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventPage(l.sessions[key], after, limit), nil
}

func (l *eventStore) AllEvents(_ context.Context, after string, limit int) ([]state.EventRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventPage(l.global, after, limit), nil
}

func eventPage(recs []state.EventRecord, after string, limit int) []state.EventRecord {
	if limit <= 0 {
		limit = 100
	}
	var an int
	fmt.Sscanf(after, "%d-0", &an)
	var out []state.EventRecord
	for _, r := range recs {
		var n int
		fmt.Sscanf(r.ID, "%d-0", &n)
		if n > an && len(out) < limit {
			out = append(out, r)
		}
	}
	return out
}
