package feed

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/shepherd-proxy/shepherd/state"
)

// fakeLog is a minimal state.EventLog for the publisher's unit tests: ids
// "<n>-0" from one counter per log, nothing ever dropped. gate, when set,
// is waited on by every append (a store that hangs).
type fakeLog struct {
	mu       sync.Mutex
	n        int
	sessions map[state.Key][]state.EventRecord
	global   []state.EventRecord
	appends  []appendCall
	gate     chan struct{}
	fail     error
}

type appendCall struct {
	key state.Key
	n   int
}

func newFakeLog() *fakeLog { return &fakeLog{sessions: map[state.Key][]state.EventRecord{}} }

func (l *fakeLog) AppendEvents(ctx context.Context, key state.Key, recs [][]byte) error {
	if l.gate != nil {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.appends = append(l.appends, appendCall{key, len(recs)})
	for _, r := range recs {
		r = slices.Clone(r) // the caller's buffer (state.EventLog)
		l.n++
		id := fmt.Sprintf("%d-0", l.n)
		l.sessions[key] = append(l.sessions[key], state.EventRecord{ID: id, Data: r})
		l.global = append(l.global, state.EventRecord{ID: id, Data: r})
	}
	return nil
}

func (l *fakeLog) SessionEvents(_ context.Context, key state.Key, after string, limit int) ([]state.EventRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return page(l.sessions[key], after, limit), nil
}

func (l *fakeLog) AllEvents(_ context.Context, after string, limit int) ([]state.EventRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return page(l.global, after, limit), nil
}

func page(recs []state.EventRecord, after string, limit int) []state.EventRecord {
	if limit <= 0 {
		limit = 100
	}
	var an int
	if after != "" {
		fmt.Sscanf(after, "%d-0", &an)
	}
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

func (l *fakeLog) all() []state.EventRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]state.EventRecord(nil), l.global...)
}

// discardLog accepts every append and keeps nothing.
type discardLog struct{ fakeLog }

func newFakeLogDiscard() *discardLog { return &discardLog{} }

func (*discardLog) AppendEvents(context.Context, state.Key, [][]byte) error { return nil }
