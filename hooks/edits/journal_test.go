package edits

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// redisJournal is a Redis store's journal under a key prefix of its own,
// or skips the test when REDIS_URL is not set.
func redisJournal(t *testing.T) state.EditJournal {
	t.Helper()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Skip("REDIS_URL not set")
	}
	r, err := state.NewRedis(state.RedisOptions{URL: u, KeyPrefix: fmt.Sprintf("edits-test-%d", time.Now().UnixNano()),
		TTL: time.Hour, Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestRedisJournal: the journal work through a Redis store: before-content
// from the history, a second call of the turn, FIFO per path, failed
// marking.
func TestRedisJournal(t *testing.T) {
	r := newRig(t, redisJournal(t), func(o *Options) { o.JournalSize = 2 })
	call := callOn(session("Fix", ""),
		assistantCall("r1", "Read", args("file_path", "a.txt")),
		result("r1", "Read", readResult("one\ntwo"), false),
	)
	r.outcome(t, call,
		delivered("e1", "Edit", args("file_path", "a.txt", "old_string", "two", "new_string", "2")),
		delivered("e2", "Edit", args("file_path", "a.txt", "old_string", "one", "new_string", "1")),
		delivered("e3", "Edit", args("file_path", "a.txt", "old_string", "2", "new_string", "II")),
	)
	recs := r.edits(t, "a.txt")
	require.Len(t, recs, 2, "journal_size 2")
	require.Equal(t, []string{"e2", "e3"}, []string{recs[0].CallID, recs[1].CallID})
	require.Equal(t, "one\n2", *recs[0].Before, "e1's after")
	require.Equal(t, "1\n2", *recs[1].Before, "e2's after")
	require.Equal(t, "1\nII", *recs[1].After)
	require.Equal(t, "Fix", recs[1].Chapter)
	r.outcome(t, callOn(session("", ""), result("e3", "Edit", "old_string not found", true)))
	recs = r.edits(t, "a.txt")
	require.Equal(t, state.EditFailed, recs[1].Status)
	require.Equal(t, "old_string not found", recs[1].Reason)
}
