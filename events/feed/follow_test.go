package feed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
)

func appendRaw(t *testing.T, log *fakeLog, tenant, session, typ string) {
	t.Helper()
	rec := `{"type":"` + typ + `","at":"2026-01-01T00:00:00Z","session":"` + session + `","tenant":"` + tenant + `"}`
	require.NoError(t, log.AppendEvents(context.Background(), state.Key{Tenant: tenant, Session: session}, [][]byte{[]byte(rec)}))
}

// Page replays what is kept after the cursor; the global feed filters by
// tenant but moves its cursor past what it skipped; each item's JSON
// carries its id first.
func TestPage(t *testing.T) {
	log := newFakeLog()
	appendRaw(t, log, "t1", "a", "request.started")  // 1-0
	appendRaw(t, log, "t2", "b", "request.started")  // 2-0
	appendRaw(t, log, "t1", "a", "request.finished") // 3-0
	f := &Follower{Log: log}

	items, next, full, err := f.Page(context.Background(), Query{})
	require.NoError(t, err)
	require.False(t, full)
	require.Equal(t, "3-0", next)
	require.Len(t, items, 3)
	require.Equal(t, Item{ID: "1-0", Type: "request.started",
		JSON: []byte(`{"id":"1-0","type":"request.started","at":"2026-01-01T00:00:00Z","session":"a","tenant":"t1"}`)}, items[0])

	items, next, _, err = f.Page(context.Background(), Query{Tenant: "t2", After: "1-0"})
	require.NoError(t, err)
	require.Equal(t, "3-0", next, "the cursor passes events of other tenants")
	require.Len(t, items, 1)
	require.Equal(t, "2-0", items[0].ID)

	items, _, _, err = f.Page(context.Background(), Query{Tenant: "t1", Session: "a", After: "1-0"})
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "request.finished", items[0].Type)
}

// follow runs Follow in the background and hands its items on a channel.
func follow(t *testing.T, f *Follower, q Query) (<-chan Item, <-chan struct{}, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	items := make(chan Item, 100)
	beats := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Follow(ctx, q, func(it Item) error { items <- it; return nil },
			func() error { beats <- struct{}{}; return nil })
	}()
	return items, beats, func() { cancel(); <-done }
}

func next(t *testing.T, ch <-chan Item, within time.Duration) Item {
	t.Helper()
	select {
	case it := <-ch:
		return it
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
		return Item{}
	}
}

// A follower is woken by the local publisher at once (no polling here).
func TestFollowWokenByPublisher(t *testing.T) {
	log := newFakeLog()
	appendRaw(t, log, "t1", "s1", "request.started")
	p, err := New(Options{Log: log})
	require.NoError(t, err)
	defer p.Close(context.Background())
	f := &Follower{Log: log, Wake: p, Poll: time.Hour, Heartbeat: time.Hour}
	items, _, stop := follow(t, f, Query{Tenant: "t1", Session: "s1"})
	defer stop()
	require.Equal(t, "1-0", next(t, items, time.Second).ID, "replays what is kept")
	p.Emit(ev("s1", 7))
	it := next(t, items, time.Second)
	require.Equal(t, "2-0", it.ID)
	require.Equal(t, "call.allowed", it.Type)
}

// Without a wake-up (another replica appended), polling finds the event.
func TestFollowPolls(t *testing.T) {
	log := newFakeLog()
	f := &Follower{Log: log, Poll: 20 * time.Millisecond, Heartbeat: time.Hour}
	items, _, stop := follow(t, f, Query{})
	defer stop()
	appendRaw(t, log, "t9", "x", "chapter.opened")
	require.Equal(t, "chapter.opened", next(t, items, time.Second).Type)
}

// A silent feed beats; a failing beat (the reader left) ends Follow.
func TestFollowHeartbeatAndLeave(t *testing.T) {
	log := newFakeLog()
	f := &Follower{Log: log, Poll: time.Hour, Heartbeat: 20 * time.Millisecond}
	_, beats, stop := follow(t, f, Query{})
	for range 2 {
		select {
		case <-beats:
		case <-time.After(time.Second):
			t.Fatal("no heartbeat")
		}
	}
	stop()

	gone := errors.New("client gone")
	err := f.Follow(context.Background(), Query{}, func(Item) error { return nil }, func() error { return gone })
	require.ErrorIs(t, err, gone)
}
