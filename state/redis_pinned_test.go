package state

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// The pinned store keeps the whole store contract.
func TestRedisPinnedContract(t *testing.T) {
	redisURL(t)
	runContract(t, func(t *testing.T, ttl time.Duration) (Store, func(time.Duration)) {
		return newTestRedis(t, RedisOptions{TTL: ttl, Timeout: 2 * time.Second, PinnedSessions: true}), time.Sleep
	})
}

// countedPinned is a pinned store under prefix whose round trips are
// counted (single-node Redis: the test looks at what one client sends).
func countedPinned(t *testing.T, prefix string, max int) (*Redis, *kit.RedisTrips) {
	t.Helper()
	o, err := redis.ParseURL(redisURL(t))
	require.NoError(t, err)
	o.ContextTimeoutEnabled = true
	client := redis.NewClient(o)
	t.Cleanup(func() { _ = client.Close() })
	tc := &kit.RedisTrips{}
	client.AddHook(tc)
	return newTestRedis(t, RedisOptions{Client: client, KeyPrefix: prefix, PinnedSessions: true, PinnedMax: max}), tc
}

// A turn's pattern (Get, then UpdateFrom the session read) makes one round
// trip with pinned sessions once this process has written the session: the
// load is answered from the copy, the save is the compare-and-set.
func TestRedisPinnedOneRoundTripPerTurn(t *testing.T) {
	ctx := context.Background()
	st, tc := countedPinned(t, testPrefix(t), 0)
	key := Key{Tenant: "t", Session: "pinned"}

	base, err := st.Get(ctx, key)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = st.UpdateFrom(ctx, key, base, func(s *Session) error { s.Requests++; return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"HGET", "EVAL"}, kit.Firsts(tc.Take()), "an unknown session is read, then created")

	for i := 2; i <= 4; i++ {
		base, err := st.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, int64(i-1), base.Requests)
		base.SetSlot("notes", noteSlot("changed by the caller")) // the caller's own copy
		saved, err := st.UpdateFrom(ctx, key, base, func(s *Session) error { s.Requests++; return nil })
		require.NoError(t, err)
		require.Equal(t, int64(i), saved.Version)
		assert.Equal(t, []string{"EVAL"}, kit.Firsts(tc.Take()), "turn %d: the save is the only round trip", i)
	}
	stats, ok := st.PinnedStats()
	require.True(t, ok)
	assert.Equal(t, PinnedStats{Hits: 3, Misses: 1}, stats)

	// What Redis holds is what the copy said.
	other := newTestRedis(t, RedisOptions{KeyPrefix: st.prefix})
	got, err := other.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, int64(4), got.Requests)
	assert.Equal(t, "changed by the caller", noteOf(got, "notes"), "UpdateFrom saves the base it was given")
}

// When another process writes a pinned session, the copy is stale: the
// save's compare-and-set sees it, applies the turn to the session in
// Redis (nothing is lost) and counts it as stale.
func TestRedisPinnedStaleCopyLosesNothing(t *testing.T) {
	ctx := context.Background()
	prefix := testPrefix(t)
	st, tc := countedPinned(t, prefix, 0)
	other := newTestRedis(t, RedisOptions{KeyPrefix: prefix})
	key := Key{Tenant: "t", Session: "shared"}
	incr := func(s *Session) error { s.Requests++; return nil }

	_, err := st.Update(ctx, key, incr)
	require.NoError(t, err)
	_, err = other.Update(ctx, key, func(s *Session) error { s.Requests += 10; s.SetSlot("intents", noteSlot("INT-001")); return nil })
	require.NoError(t, err)
	kit.Firsts(tc.Take())

	base, err := st.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, int64(1), base.Requests, "the copy does not know the other process's write")
	saved, err := st.UpdateFrom(ctx, key, base, incr)
	require.NoError(t, err)
	assert.Equal(t, int64(12), saved.Requests, "both writes are kept")
	assert.Equal(t, "INT-001", noteOf(saved, "intents"))
	assert.Equal(t, int64(3), saved.Version)
	assert.Equal(t, []string{"EVAL", "HMGET", "EVAL"}, kit.Firsts(tc.Take()), "the failed set, then the read and the set again")
	stats, _ := st.PinnedStats()
	assert.Equal(t, int64(1), stats.Stale)

	got, err := st.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, int64(12), got.Requests, "the copy is the session as saved")
	assert.Empty(t, kit.Firsts(tc.Take()))
}

// Replicas that each pin the sessions they write, sharing one session
// (the deployment pinning is not meant for), still lose no update.
func TestRedisPinnedReplicasLoseNothing(t *testing.T) {
	ctx := context.Background()
	prefix := testPrefix(t)
	const replicas, workers, each = 3, 4, 10
	k := Key{Tenant: "t", Session: "shared"}
	var wg sync.WaitGroup
	stores := make([]*Redis, replicas)
	for i := range stores {
		stores[i] = newTestRedis(t, RedisOptions{KeyPrefix: prefix, PinnedSessions: true})
		for range workers {
			wg.Go(func() {
				for range each {
					base, err := stores[i].Get(ctx, k)
					if err != nil && !assert.ErrorIs(t, err, ErrNotFound) {
						return
					}
					_, err = stores[i].UpdateFrom(ctx, k, base, func(s *Session) error { s.Requests++; return nil })
					assert.NoError(t, err)
				}
			})
		}
	}
	wg.Wait()
	got, err := newTestRedis(t, RedisOptions{KeyPrefix: prefix}).Get(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, int64(replicas*workers*each), got.Requests)
	var stale int64
	for _, st := range stores {
		s, _ := st.PinnedStats()
		stale += s.Stale
	}
	assert.Positive(t, stale, "replicas sharing a session made stale copies")
}

// The copies are bounded: beyond PinnedMax the least recently used session
// is read from Redis again. Deleting a session forgets its copy.
func TestRedisPinnedBoundedAndDeleted(t *testing.T) {
	ctx := context.Background()
	st, tc := countedPinned(t, testPrefix(t), 2)
	k := func(s string) Key { return Key{Tenant: "t", Session: s} }
	for _, s := range []string{"a", "b", "c"} {
		_, err := st.Update(ctx, k(s), func(s *Session) error { s.Requests++; return nil })
		require.NoError(t, err)
	}
	kit.Firsts(tc.Take())
	for _, s := range []string{"b", "c"} {
		_, err := st.Get(ctx, k(s))
		require.NoError(t, err)
	}
	assert.Empty(t, kit.Firsts(tc.Take()), "b and c are pinned")
	got, err := st.Get(ctx, k("a"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Requests)
	assert.Equal(t, []string{"HGET"}, kit.Firsts(tc.Take()), "a was the least recently used and left")

	require.NoError(t, st.Delete(ctx, k("b")))
	_, err = st.Get(ctx, k("b"))
	assert.ErrorIs(t, err, ErrNotFound)
}

// A copy lives as long as the session does in Redis (the TTL since its
// last write), then the store asks Redis again.
func TestRedisPinnedExpires(t *testing.T) {
	p := newPinnedSessions(4, time.Minute)
	key := Key{Tenant: "t", Session: "s"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.put(key, &Session{ID: "s", Tenant: "t", UpdatedAt: at, Version: 2, Requests: 5})
	require.NotNil(t, p.get(key, at.Add(59*time.Second)))
	p.put(key, &Session{ID: "s", Tenant: "t", UpdatedAt: at, Version: 1})
	assert.Equal(t, int64(5), p.get(key, at).Requests, "an older write does not replace a newer copy")
	assert.Nil(t, p.get(key, at.Add(time.Minute)), "expired with the session")
	assert.Nil(t, p.get(key, at), "and forgotten")
}

// With the counters prefetched (budgets on), the load reads Redis as
// without pinning: the counters change outside the session.
func TestRedisPinnedPrefetchReadsRedis(t *testing.T) {
	ctx := context.Background()
	st, tc := countedPinned(t, testPrefix(t), 0)
	st.PrefetchCounters()
	key := Key{Tenant: "t", Session: "budgets"}
	_, err := st.Update(ctx, key, func(s *Session) error { s.Requests++; return nil })
	require.NoError(t, err)
	tc.Take()
	_, err = st.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"HGET", "HGETALL"}}, tc.Take(), "the session and its counters, one pipeline")
}
