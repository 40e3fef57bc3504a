package edits

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

// testJournal is the memory store's journal when it keeps one, else a
// minimal stand-in with the same contract for what these tests use.
func testJournal(t *testing.T) state.EditJournal {
	st := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	t.Cleanup(func() { _ = st.Close() })
	if j, ok := any(st).(state.EditJournal); ok {
		return j
	}
	return &fakeJournal{}
}

type fakeJournal struct {
	mu   sync.Mutex
	seq  int64
	recs []state.EditRecord
	// fail, when set, is returned by every call; calls counts them.
	fail  error
	calls int
	block chan struct{}
}

func (f *fakeJournal) AppendEdits(_ context.Context, key state.Key, keep int, recs []state.EditRecord) ([]state.EditRecord, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return nil, f.fail
	}
	if !key.Valid() {
		return nil, state.ErrInvalidKey
	}
	out := make([]state.EditRecord, 0, len(recs))
	for _, r := range recs {
		f.seq++
		r.Seq = f.seq
		f.recs = append(f.recs, r)
		out = append(out, r)
		var n int
		for i := len(f.recs) - 1; i >= 0; i-- {
			if f.recs[i].Path == r.Path {
				n++
				if n > keep {
					f.recs = append(f.recs[:i], f.recs[i+1:]...)
				}
			}
		}
	}
	return out, nil
}

func (f *fakeJournal) SetEditStatus(_ context.Context, _ state.Key, callID, status, reason string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return 0, f.fail
	}
	n := 0
	for i := range f.recs {
		if f.recs[i].CallID == callID {
			f.recs[i].Status, f.recs[i].Reason = status, reason
			n++
		}
	}
	return n, nil
}

func (f *fakeJournal) Edits(_ context.Context, _ state.Key, path string) ([]state.EditRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []state.EditRecord
	for _, r := range f.recs {
		if path == "" || r.Path == path {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeJournal) Edit(_ context.Context, _ state.Key, seq int64) (state.EditRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.recs {
		if r.Seq == seq {
			return r, nil
		}
	}
	return state.EditRecord{}, state.ErrNotFound
}
