package state

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countersStore is a store with budget counters.
type countersStore interface {
	Store
	Counters
}

// countersHarness is a fresh store, closed by t.Cleanup, and how to let
// time pass for it.
type countersHarness struct {
	st   countersStore
	pass func(d time.Duration)
}

type countersFactory func(t *testing.T, ttl time.Duration) countersHarness

func TestMemoryCountersContract(t *testing.T) {
	runCountersContract(t, func(t *testing.T, ttl time.Duration) countersHarness {
		m, clock := newTestMemory(t, MemoryOptions{TTL: ttl})
		return countersHarness{st: m, pass: clock.Advance}
	})
}

func TestRedisCountersContract(t *testing.T) {
	redisURL(t)
	runCountersContract(t, func(t *testing.T, ttl time.Duration) countersHarness {
		r := newTestRedis(t, RedisOptions{TTL: ttl, Timeout: 2 * time.Second})
		return countersHarness{st: r, pass: time.Sleep}
	})
}

// runCountersContract checks the Counters contract (counters.go) against
// the stores newStore makes.
func runCountersContract(t *testing.T, newStore countersFactory) {
	ctx := context.Background()
	ka := Key{Tenant: "t1", Session: "a"}
	kb := Key{Tenant: "t1", Session: "b"}
	fresh := func(t *testing.T, ttl time.Duration) countersHarness {
		t.Parallel()
		if ttl == 0 {
			ttl = longTTL
		}
		return newStore(t, ttl)
	}
	read := func(t *testing.T, st Counters, k Key) map[string]int64 {
		t.Helper()
		got, err := st.ReadCounters(ctx, k)
		require.NoError(t, err)
		require.NotNil(t, got)
		return got
	}

	t.Run("ReserveWithinLimit", func(t *testing.T) {
		h := fresh(t, 0)
		for i, want := range []struct {
			n, limit, value int64
			ok              bool
		}{
			{n: 4, limit: 10, value: 4, ok: true},
			{n: 6, limit: 10, value: 10, ok: true}, // exactly at the limit
			{n: 1, limit: 10, value: 10, ok: false},
			{n: 5, limit: 0, value: 15, ok: true}, // no limit
			{n: 1, limit: -1, value: 16, ok: true},
			{n: 1, limit: 16, value: 16, ok: false},
		} {
			v, ok, err := h.st.Reserve(ctx, ka, "turns", want.n, want.limit)
			require.NoError(t, err)
			assert.Equal(t, want.value, v, "step %d value", i)
			assert.Equal(t, want.ok, ok, "step %d ok", i)
		}
		assert.Equal(t, map[string]int64{"turns": 16}, read(t, h.st, ka))
		assert.Empty(t, read(t, h.st, kb), "another session's counters are its own")
	})

	t.Run("AddGivesBack", func(t *testing.T) {
		h := fresh(t, 0)
		v, ok, err := h.st.Reserve(ctx, ka, "tokens", 900, 1000)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, int64(900), v)
		v, err = h.st.Add(ctx, ka, "tokens", -700) // the reply used 200 of 900
		require.NoError(t, err)
		assert.Equal(t, int64(200), v)
		_, ok, err = h.st.Reserve(ctx, ka, "tokens", 800, 1000)
		require.NoError(t, err)
		assert.True(t, ok, "what was given back can be reserved again")
		v, err = h.st.Add(ctx, ka, "never-reserved", 5)
		require.NoError(t, err)
		assert.Equal(t, int64(5), v, "Add on a counter never written starts at 0")
		v, err = h.st.Add(ctx, ka, "tokens", 1_000_000)
		require.NoError(t, err)
		assert.Equal(t, int64(1_001_000), v, "Add has no limit")
	})

	t.Run("ConcurrentReserveIsExact", func(t *testing.T) {
		h := fresh(t, 0)
		var wg sync.WaitGroup
		var won atomic.Int64
		errs := make(chan error, 50)
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok, err := h.st.Reserve(ctx, ka, "turns", 1, 10)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					won.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		assert.Equal(t, int64(10), won.Load(), "exactly the limit's worth of 50 concurrent reserves succeed")
		assert.Equal(t, int64(10), read(t, h.st, ka)["turns"])
	})

	t.Run("Streak", func(t *testing.T) {
		h := fresh(t, 0)
		for i, step := range []struct {
			name, sig string
			want      int64
		}{
			{"loop", "Bash\x00ls", 1},
			{"loop", "Bash\x00ls", 2},
			{"loop", "Bash\x00ls", 3},
			{"loop", "Read\x00a.go", 1}, // another call restarts it
			{"loop", "Bash\x00ls", 1},   // and the old one starts over
			{"other", "Bash\x00ls", 1},  // streaks are per name
			{"loop", "Bash\x00ls", 2},
		} {
			got, err := h.st.Streak(ctx, ka, step.name, step.sig)
			require.NoError(t, err)
			assert.Equal(t, step.want, got, "step %d", i)
		}
		assert.Equal(t, map[string]int64{"loop": 2, "other": 1}, read(t, h.st, ka), "streaks read as their length")
		got, err := h.st.Streak(ctx, kb, "loop", "Bash\x00ls")
		require.NoError(t, err)
		assert.Equal(t, int64(1), got, "another session's streak is its own")
	})

	t.Run("InvalidKey", func(t *testing.T) {
		h := fresh(t, 0)
		for _, k := range []Key{{Tenant: "t", Session: ""}, {Tenant: "", Session: "s"}, {Tenant: "a:b", Session: "s"}} {
			_, _, err := h.st.Reserve(ctx, k, "turns", 1, 0)
			assert.ErrorIs(t, err, ErrInvalidKey)
			_, err = h.st.Add(ctx, k, "turns", 1)
			assert.ErrorIs(t, err, ErrInvalidKey)
			_, err = h.st.Streak(ctx, k, "loop", "x")
			assert.ErrorIs(t, err, ErrInvalidKey)
			_, err = h.st.ReadCounters(ctx, k)
			assert.ErrorIs(t, err, ErrInvalidKey)
		}
	})

	t.Run("DeleteDropsCounters", func(t *testing.T) {
		h := fresh(t, 0)
		_, err := h.st.Update(ctx, ka, func(*Session) error { return nil })
		require.NoError(t, err)
		_, err = h.st.Add(ctx, ka, "turns", 3)
		require.NoError(t, err)
		_, err = h.st.Streak(ctx, ka, "loop", "x")
		require.NoError(t, err)
		_, err = h.st.Add(ctx, kb, "turns", 1)
		require.NoError(t, err)
		require.NoError(t, h.st.Delete(ctx, ka))
		assert.Empty(t, read(t, h.st, ka), "Delete drops the session's counters")
		got, err := h.st.Streak(ctx, ka, "loop", "x")
		require.NoError(t, err)
		assert.Equal(t, int64(1), got, "the streak's signature went too")
		assert.Equal(t, map[string]int64{"turns": 1}, read(t, h.st, kb), "other sessions keep theirs")
		require.NoError(t, h.st.Delete(ctx, kb))
		assert.Empty(t, read(t, h.st, kb), "counters of a session never stored are deleted too")
	})

	t.Run("StagedOpsRideInTheSave", func(t *testing.T) {
		h := fresh(t, 0)
		_, err := h.st.Add(ctx, ka, "tokens", 10)
		require.NoError(t, err)
		_, err = h.st.Streak(ctx, ka, "loop", "x")
		require.NoError(t, err)
		var landed atomic.Int64
		stage := func(s *Session) error {
			s.Usage.Turns++
			s.Usage.InputTokens += 300
			s.Usage.OutputTokens += 40
			s.Usage.CostUSD += 0.0123456
			s.StageCounters(
				CounterOp{Name: "turns", Spend: SpendTurns},
				CounterOp{Name: "tokens", Spend: SpendTokens},
				CounterOp{Name: "cost_micros", Spend: SpendCostMicros, Landed: func(v int64) { landed.Add(v) }},
				CounterOp{Name: "calls:Bash", N: 2},
				CounterOp{Name: "loop", Sig: "x"},
				CounterOp{Name: "other", Sig: "y"},
				CounterOp{Name: "zero"},
			)
			return nil
		}
		saved, err := h.st.Update(ctx, ka, stage)
		require.NoError(t, err)
		want := map[string]int64{"turns": 1, "tokens": 350, "cost_micros": 12346, "calls:Bash": 2, "loop": 2, "other": 1}
		assert.Equal(t, want, read(t, h.st, ka), "the spend the save added, the adds and the streak steps")
		assert.Equal(t, saved.Version, landed.Load(), "Landed once the write landed, with its version")
		_, staged := saved.Counters()
		assert.False(t, staged, "a session Update returns carries no snapshot")

		// A failed update applies nothing and lands nothing.
		_, err = h.st.Update(ctx, ka, func(s *Session) error {
			s.StageCounters(CounterOp{Name: "turns", N: 5, Landed: func(v int64) { landed.Add(v) }})
			return fmt.Errorf("no")
		})
		require.Error(t, err)
		assert.Equal(t, want, read(t, h.st, ka))
		assert.Equal(t, saved.Version, landed.Load(), "a failed update lands nothing")

		// Get attaches the counters once prefetch is on.
		got, err := h.st.Get(ctx, ka)
		require.NoError(t, err)
		_, ok := got.Counters()
		assert.False(t, ok, "no prefetch: no snapshot")
		h.st.(CounterPrefetcher).PrefetchCounters()
		got, err = h.st.Get(ctx, ka)
		require.NoError(t, err)
		snap, ok := got.Counters()
		require.True(t, ok)
		assert.Equal(t, want, snap.Values)
		assert.Equal(t, map[string]string{"loop": "x", "other": "y"}, snap.Sigs)
		c := got.Clone()
		c.StageCounters(CounterOp{Name: "turns", N: 1})
		_, ok = c.Counters()
		assert.True(t, ok, "a copy keeps the snapshot")
		assert.Empty(t, got.Clone().staged, "a copy drops what was staged")
	})

	t.Run("StagedOpsApplyOnceUnderConflict", func(t *testing.T) {
		h := fresh(t, 0)
		_, err := h.st.Update(ctx, ka, func(*Session) error { return nil })
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h.st.Update(ctx, ka, func(s *Session) error {
					s.Requests++
					s.StageCounters(CounterOp{Name: "turns", N: 1})
					return nil
				})
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		got, err := h.st.Get(ctx, ka)
		require.NoError(t, err)
		assert.Equal(t, int64(10), got.Requests)
		assert.Equal(t, map[string]int64{"turns": 10}, read(t, h.st, ka), "each save's ops once, however many attempts")
	})

	t.Run("TTLSinceLastChange", func(t *testing.T) {
		ttl := time.Second
		h := fresh(t, ttl)
		_, err := h.st.Add(ctx, ka, "turns", 1)
		require.NoError(t, err)
		h.pass(ttl * 6 / 10)
		_, _, err = h.st.Reserve(ctx, ka, "turns", 1, 0)
		require.NoError(t, err)
		h.pass(ttl * 7 / 10) // past the first change's TTL, not the second's
		assert.Equal(t, map[string]int64{"turns": 2}, read(t, h.st, ka), "a change refreshes the TTL")
		_, ok, err := h.st.Reserve(ctx, ka, "turns", 5, 3)
		require.NoError(t, err)
		require.False(t, ok)
		h.pass(ttl * 8 / 10)
		assert.Empty(t, read(t, h.st, ka), "expired TTL after the last change (a refused Reserve changes nothing)")
	})
}

// TestRedisCountersKeyLayout: the counters are the hash P:{T:S}:b, in the
// session's slot, with the session TTL, deleted with the session.
func TestRedisCountersKeyLayout(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, TTL: time.Hour})
	k := Key{Tenant: "abc123", Session: "sess-1"}
	bk := prefix + ":{abc123:sess-1}:b"
	_, _, err := r.Reserve(ctx, k, "turns", 2, 5)
	require.NoError(t, err)
	_, err = r.Streak(ctx, k, "loop", "sig")
	require.NoError(t, err)
	_, err = r.Add(ctx, k, "calls:Bash", 1)
	require.NoError(t, err)
	fields, err := raw.HGetAll(ctx, bk).Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"c:turns": "2", "c:loop": "1", "s:loop": "sig", "c:calls:Bash": "1"}, fields)
	ttl, err := raw.PTTL(ctx, bk).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Hour.Seconds(), ttl.Seconds(), 60, "the session TTL")
	slotS, err := raw.ClusterKeySlot(ctx, prefix+":{abc123:sess-1}:s").Result()
	if err == nil { // CLUSTER KEYSLOT works on a standalone server too
		slotB, err := raw.ClusterKeySlot(ctx, bk).Result()
		require.NoError(t, err)
		assert.Equal(t, slotS, slotB, "the session's hash slot")
	}
	require.NoError(t, r.Delete(ctx, k))
	n, err := raw.Exists(ctx, bk).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Delete removes the counters")
}

// TestMemoryCountersBounded: at most MaxSessions sessions' counters are
// kept and evicting a session drops its counters.
func TestMemoryCountersBounded(t *testing.T) {
	ctx := context.Background()
	m, clock := newTestMemory(t, MemoryOptions{MaxSessions: 2, TTL: time.Minute, JanitorInterval: -1})
	k := func(i int) Key { return Key{Tenant: "t", Session: fmt.Sprint(i)} }
	for i := range 3 {
		_, err := m.Add(ctx, k(i), "turns", 1)
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	m.ctMu.Lock()
	assert.Len(t, m.counters, 2, "at most MaxSessions sessions' counters")
	assert.Nil(t, m.counters[k(0)], "the least recently changed went")
	m.ctMu.Unlock()
	for i := 1; i <= 3; i++ {
		_, err := m.Update(ctx, k(i), func(*Session) error { return nil })
		require.NoError(t, err)
	}
	got, err := m.ReadCounters(ctx, k(1))
	require.NoError(t, err)
	assert.Empty(t, got, "evicting session 1 dropped its counters")
	clock.Advance(2 * time.Minute)
	m.purgeCounters(clock.Now())
	m.ctMu.Lock()
	assert.Empty(t, m.counters, "expired counters are purged")
	m.ctMu.Unlock()
}

// BenchmarkRedisReserve: one Reserve, one Lua script round trip.
func BenchmarkRedisReserve(b *testing.B) {
	u := os.Getenv("REDIS_URL")
	if u == "" {
		b.Skip("REDIS_URL not set")
	}
	r, err := NewRedis(RedisOptions{URL: u, KeyPrefix: "shepherd-bench-counters"})
	require.NoError(b, err)
	defer r.Close()
	k := Key{Tenant: "t", Session: "bench"}
	defer r.Delete(context.Background(), k)
	for b.Loop() {
		if _, _, err := r.Reserve(context.Background(), k, "turns", 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}
