package state

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for MemoryOptions.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestMemory(t *testing.T, opts MemoryOptions) (*Memory, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	opts.Now = clock.Now
	m := NewMemory(opts)
	t.Cleanup(func() { _ = m.Close() })
	return m, clock
}

func TestMemoryContract(t *testing.T) {
	runContract(t, func(t *testing.T, ttl time.Duration) (Store, func(time.Duration)) {
		m, clock := newTestMemory(t, MemoryOptions{TTL: ttl})
		return m, clock.Advance
	})
}

func TestMemoryEvictsLeastRecentlyUpdated(t *testing.T) {
	ctx := context.Background()
	m, clock := newTestMemory(t, MemoryOptions{MaxSessions: 3})
	k := func(i int) Key { return Key{Tenant: "t", Session: fmt.Sprint(i)} }
	for i := range 3 {
		_, err := m.Update(ctx, k(i), func(*Session) error { return nil })
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	// Updating 0 makes 1 the least recently updated.
	_, err := m.Update(ctx, k(0), func(*Session) error { return nil })
	require.NoError(t, err)
	_, err = m.Update(ctx, k(3), func(*Session) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, 3, m.Len())
	_, err = m.Get(ctx, k(1))
	assert.ErrorIs(t, err, ErrNotFound, "1 evicted")
	for _, i := range []int{0, 2, 3} {
		_, err := m.Get(ctx, k(i))
		assert.NoError(t, err, "%d kept", i)
	}
	// Reads do not count as use.
	_, err = m.Get(ctx, k(2))
	require.NoError(t, err)
	_, err = m.Update(ctx, k(4), func(*Session) error { return nil })
	require.NoError(t, err)
	_, err = m.Get(ctx, k(2))
	assert.ErrorIs(t, err, ErrNotFound, "2 evicted despite the Get")
	list, err := m.List(ctx, "", 0)
	require.NoError(t, err)
	assert.Equal(t, []Key{k(4), k(3), k(0)}, summaryKeys(list))
}

func TestMemoryEvictionPrefersExpired(t *testing.T) {
	ctx := context.Background()
	m, clock := newTestMemory(t, MemoryOptions{MaxSessions: 2, TTL: time.Minute, JanitorInterval: -1})
	old := Key{Tenant: "t", Session: "old"}
	_, err := m.Update(ctx, old, func(*Session) error { return nil })
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	a, b := Key{Tenant: "t", Session: "a"}, Key{Tenant: "t", Session: "b"}
	for _, k := range []Key{a, b} {
		_, err := m.Update(ctx, k, func(*Session) error { return nil })
		require.NoError(t, err)
	}
	assert.Equal(t, 2, m.Len())
	for _, k := range []Key{a, b} {
		_, err := m.Get(ctx, k)
		assert.NoError(t, err)
	}
}

func TestMemoryPurgesExpired(t *testing.T) {
	ctx := context.Background()
	t.Run("janitor", func(t *testing.T) {
		m, clock := newTestMemory(t, MemoryOptions{TTL: time.Minute, JanitorInterval: 5 * time.Millisecond})
		for i := range 5 {
			_, err := m.Update(ctx, Key{Tenant: "t", Session: fmt.Sprint(i)}, func(*Session) error { return nil })
			require.NoError(t, err)
		}
		clock.Advance(30 * time.Second)
		live := Key{Tenant: "t", Session: "live"}
		_, err := m.Update(ctx, live, func(*Session) error { return nil })
		require.NoError(t, err)
		clock.Advance(31 * time.Second)
		require.Eventually(t, func() bool { return m.Len() == 1 }, 5*time.Second, 5*time.Millisecond)
		_, err = m.Get(ctx, live)
		assert.NoError(t, err)
	})
	t.Run("lazily by Get", func(t *testing.T) {
		m, clock := newTestMemory(t, MemoryOptions{TTL: time.Minute, JanitorInterval: -1})
		k := Key{Tenant: "t", Session: "s"}
		_, err := m.Update(ctx, k, func(*Session) error { return nil })
		require.NoError(t, err)
		clock.Advance(time.Minute)
		assert.Equal(t, 1, m.Len())
		_, err = m.Get(ctx, k)
		assert.ErrorIs(t, err, ErrNotFound, "expired exactly at TTL")
		assert.Equal(t, 0, m.Len())
	})
}

func TestMemoryDefaults(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	defer m.Close()
	assert.Equal(t, DefaultMaxSessions, m.maxSessions)
	assert.Equal(t, DefaultTTL, m.ttl)
	s, err := m.Update(context.Background(), Key{Tenant: "t", Session: "s"}, func(*Session) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, time.UTC, s.UpdatedAt.Location())
	assert.Equal(t, s.UpdatedAt, s.UpdatedAt.Round(0), "no monotonic reading")
}

// The per-key lock held while fn runs blocks only writers of that key (and of
// keys sharing its stripe), never readers.
func TestMemoryBlockedFnDoesNotBlockReads(t *testing.T) {
	ctx := context.Background()
	m, _ := newTestMemory(t, MemoryOptions{})
	k := Key{Tenant: "t", Session: "s"}
	_, err := m.Update(ctx, k, func(*Session) error { return nil })
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = m.Update(ctx, k, func(*Session) error { close(entered); <-release; return nil })
	}()
	<-entered
	defer close(release)
	_, err = m.Get(ctx, k)
	assert.NoError(t, err)
	_, err = m.List(ctx, "", 0)
	assert.NoError(t, err)
}
