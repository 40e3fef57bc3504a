package proxy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/state"
)

// gatedStore is the memory store with its updates counted; the first
// update waits for gate, so that touches queue up behind it.
type gatedStore struct {
	*state.Memory
	gate    chan struct{}
	once    sync.Once
	updates atomic.Int64
}

func (g *gatedStore) Update(ctx context.Context, key state.Key, fn func(*state.Session) error) (*state.Session, error) {
	g.once.Do(func() { <-g.gate })
	g.updates.Add(1)
	return g.Memory.Update(ctx, key, fn)
}

// TestRecorderCoalescesTouches: touches that wait together are written
// with one update per session, and none is lost: each session counts
// every request, and the effects run in the order they were queued.
func TestRecorderCoalescesTouches(t *testing.T) {
	st := &gatedStore{Memory: state.NewMemory(state.MemoryOptions{}), gate: make(chan struct{})}
	defer st.Close()
	r := newSessionRecorder(st, zap.NewNop(), NewMetrics(), time.Second)
	keys := []state.Key{{Tenant: "t", Session: "a"}, {Tenant: "t", Session: "b"}, {Tenant: "t", Session: "c"}}
	r.touch(keys[0]) // taken by the worker, which then waits on the gate
	require.Eventually(t, func() bool { return len(r.queue) == 0 }, time.Second, time.Millisecond)
	const n = 150
	var order []string
	var mu sync.Mutex
	for i := range n {
		k := keys[i%len(keys)]
		if i%10 == 0 {
			tag := fmt.Sprint(i)
			r.apply(k, func(s *state.Session) { mu.Lock(); order = append(order, s.ID+tag); mu.Unlock() })
			continue
		}
		r.touch(k)
	}
	close(st.gate)
	r.close(5 * time.Second)

	want := map[string]int64{"a": 1}
	var wantOrder []string
	for i := range n {
		k := keys[i%len(keys)]
		if i%10 == 0 {
			wantOrder = append(wantOrder, k.Session+fmt.Sprint(i))
			continue
		}
		want[k.Session]++
	}
	for _, k := range keys {
		s, err := st.Memory.Get(context.Background(), k)
		require.NoError(t, err)
		require.Equal(t, want[k.Session], s.Requests, "session %s", k.Session)
	}
	// per session, effects in queue order
	for _, k := range keys {
		var got, exp []string
		for _, o := range order {
			if o[:1] == k.Session {
				got = append(got, o)
			}
		}
		for _, o := range wantOrder {
			if o[:1] == k.Session {
				exp = append(exp, o)
			}
		}
		require.Equal(t, exp, got)
	}
	// 1 for the first touch, then at most one per session per batch
	require.LessOrEqual(t, st.updates.Load(), int64(1+3*((n+maxTouchBatch-1)/maxTouchBatch)), "touches were not coalesced")
}

// TestRecorderGathersTouches: touches that arrive one by one within the
// batch delay (a busy proxy's requests, each touched as it ends) are
// written together, one update per session, none lost.
func TestRecorderGathersTouches(t *testing.T) {
	st := &gatedStore{Memory: state.NewMemory(state.MemoryOptions{}), gate: make(chan struct{})}
	close(st.gate)
	defer st.Close()
	r := newSessionRecorder(st, zap.NewNop(), NewMetrics(), time.Second)
	keys := []state.Key{{Tenant: "t", Session: "a"}, {Tenant: "t", Session: "b"}}
	const n = 200
	for i := range n {
		r.touch(keys[i%2])
	}
	r.close(5 * time.Second)
	for _, k := range keys {
		s, err := st.Memory.Get(context.Background(), k)
		require.NoError(t, err)
		require.Equal(t, int64(n/2), s.Requests, "session %s", k.Session)
	}
	// One batch, unless this goroutine was held up for a batch delay
	// between touches (then a few).
	require.LessOrEqual(t, st.updates.Load(), int64(2*3), "touches sent within the delay were not gathered")
}
