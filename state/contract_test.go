package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeFactory returns a fresh, empty store whose sessions expire ttl after
// their last Update, and a function that lets d of that store's time pass (a
// real sleep, or a fake clock's advance). The store is closed by t.Cleanup.
type storeFactory func(t *testing.T, ttl time.Duration) (st Store, pass func(d time.Duration))

// longTTL is the TTL for subtests that are not about expiry.
const longTTL = time.Hour

var errBoom = errors.New("boom")

// runContract checks every clause of the Store contract (store.go) against
// the stores newStore makes. Subtests run in parallel; each gets its own
// store.
func runContract(t *testing.T, newStore storeFactory) {
	fresh := func(t *testing.T) Store {
		t.Parallel()
		st, _ := newStore(t, longTTL)
		return st
	}
	ctx := context.Background()
	key := Key{Tenant: "t0", Session: "s0"}
	incr := func(s *Session) error { s.Requests++; return nil }

	t.Run("GetMissing", func(t *testing.T) {
		st := fresh(t)
		_, err := st.Get(ctx, key)
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("UpdateCreates", func(t *testing.T) {
		st := fresh(t)
		var seen Session
		got, err := st.Update(ctx, key, func(s *Session) error {
			seen = *s
			s.SetSlot("notes", noteSlot("intro"))
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, key.Session, seen.ID)
		assert.Equal(t, key.Tenant, seen.Tenant)
		assert.False(t, seen.CreatedAt.IsZero(), "fn sees CreatedAt")
		assert.Zero(t, seen.Version)
		assert.Zero(t, seen.Requests)

		assert.Equal(t, key.Session, got.ID)
		assert.Equal(t, key.Tenant, got.Tenant)
		assert.Equal(t, int64(1), got.Version)
		assert.Equal(t, "intro", noteOf(got, "notes"))
		assert.False(t, got.UpdatedAt.IsZero(), "UpdatedAt set")
		assert.False(t, got.UpdatedAt.Before(got.CreatedAt))

		stored, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, got, stored)
	})

	t.Run("VersionIncrements", func(t *testing.T) {
		t.Parallel()
		st, pass := newStore(t, longTTL)
		first, err := st.Update(ctx, key, incr)
		require.NoError(t, err)
		prev := first
		for i := 2; i <= 5; i++ {
			pass(2 * time.Millisecond)
			got, err := st.Update(ctx, key, func(s *Session) error {
				assert.Equal(t, prev.Version, s.Version, "fn sees the stored session")
				assert.Equal(t, prev.Requests, s.Requests)
				s.Requests++
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, int64(i), got.Version)
			assert.Equal(t, int64(i), got.Requests)
			assert.True(t, got.CreatedAt.Equal(first.CreatedAt), "CreatedAt kept")
			assert.True(t, got.UpdatedAt.After(prev.UpdatedAt), "UpdatedAt advances")
			prev = got
		}
	})

	t.Run("StoreManagedFields", func(t *testing.T) {
		st := fresh(t)
		first, err := st.Update(ctx, key, incr)
		require.NoError(t, err)
		got, err := st.Update(ctx, key, func(s *Session) error {
			s.ID, s.Tenant = "other", "other"
			s.Version = 100
			s.CreatedAt, s.UpdatedAt = time.Time{}, time.Time{}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, key.Session, got.ID)
		assert.Equal(t, key.Tenant, got.Tenant)
		assert.Equal(t, int64(2), got.Version)
		assert.True(t, got.CreatedAt.Equal(first.CreatedAt))
		assert.False(t, got.UpdatedAt.IsZero())
		_, err = st.Get(ctx, Key{Tenant: "other", Session: "other"})
		assert.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("RoundTripsEveryField", func(t *testing.T) {
		st := fresh(t)
		want := fullSession()
		got, err := st.Update(ctx, key, func(s *Session) error {
			id, tenant, created := s.ID, s.Tenant, s.CreatedAt
			*s = *fullSession()
			s.ID, s.Tenant, s.CreatedAt = id, tenant, created
			return nil
		})
		require.NoError(t, err)
		want.ID, want.Tenant, want.CreatedAt = key.Session, key.Tenant, got.CreatedAt
		want.UpdatedAt, want.Version = got.UpdatedAt, 1
		assert.Equal(t, want, got)
		stored, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, want, stored)
	})

	t.Run("FnErrorStoresNothing", func(t *testing.T) {
		st := fresh(t)
		_, err := st.Update(ctx, key, func(s *Session) error {
			s.Requests = 99
			return errBoom
		})
		require.ErrorIs(t, err, errBoom)
		_, err = st.Get(ctx, key)
		require.ErrorIs(t, err, ErrNotFound, "a failed create stores nothing")

		_, err = st.Update(ctx, key, incr)
		require.NoError(t, err)
		_, err = st.Update(ctx, key, func(s *Session) error {
			s.Requests = 99
			s.SetSlot("notes", noteSlot("changed"))
			return fmt.Errorf("wrapped: %w", errBoom)
		})
		require.ErrorIs(t, err, errBoom)
		got, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Version)
		assert.Equal(t, int64(1), got.Requests)
		assert.Empty(t, noteOf(got, "notes"))
	})

	t.Run("CopiesAreIndependent", func(t *testing.T) {
		st := fresh(t)
		var inFn *Session
		ret, err := st.Update(ctx, key, func(s *Session) error {
			*s = *fullSession()
			inFn = s
			return nil
		})
		require.NoError(t, err)
		want, err := st.Get(ctx, key)
		require.NoError(t, err)

		mutate := func(s *Session) {
			s.Requests = 1000
			s.Slots["notes"].(*RawSlot).Noted = "mutated"
			s.Slots["example"].(*RawSlot).Data[0] = 'X'
			// The ledger is copied on write (Session.Ledger): a writer
			// replaces an entry in its own copy of the array; appends to
			// the session's slice allocate.
			s.Ledger = slices.Clone(s.Ledger)
			s.Ledger[0].Data = []byte(`{"x":2}`)
			s.Ledger = append(s.Ledger, LedgerEntry{Kind: "extra"})
			s.SetSlot("extra", noteSlot("extra"))
		}
		mutate(inFn)
		if ret != inFn {
			mutate(ret)
		}
		got, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, want, got, "mutating Update's session after return")
		mutate(got)
		again, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, want, again, "mutating Get's session")
		_, err = st.Update(ctx, key, func(s *Session) error {
			assert.Equal(t, want.Ledger, s.Ledger, "fn gets the stored state")
			return errBoom
		})
		require.ErrorIs(t, err, errBoom)
	})

	t.Run("TenantsIsolated", func(t *testing.T) {
		t.Parallel()
		st, pass := newStore(t, longTTL)
		a := Key{Tenant: "ta", Session: "same"}
		b := Key{Tenant: "tb", Session: "same"}
		_, err := st.Update(ctx, a, func(s *Session) error { s.SetSlot("notes", noteSlot("A")); return nil })
		require.NoError(t, err)
		_, err = st.Get(ctx, b)
		require.ErrorIs(t, err, ErrNotFound)
		pass(2 * time.Millisecond)
		_, err = st.Update(ctx, b, func(s *Session) error { s.SetSlot("notes", noteSlot("B")); return nil })
		require.NoError(t, err)
		ga, err := st.Get(ctx, a)
		require.NoError(t, err)
		gb, err := st.Get(ctx, b)
		require.NoError(t, err)
		assert.Equal(t, "A", noteOf(ga, "notes"))
		assert.Equal(t, "B", noteOf(gb, "notes"))
		assert.Equal(t, int64(1), gb.Version)

		la, err := st.List(ctx, "ta", 0)
		require.NoError(t, err)
		assert.Equal(t, []Key{a}, summaryKeys(la))
		all, err := st.List(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, []Key{b, a}, summaryKeys(all))

		require.NoError(t, st.Delete(ctx, b))
		_, err = st.Get(ctx, a)
		require.NoError(t, err, "deleting one tenant's session keeps the other's")
	})

	t.Run("ListOrderAndLimit", func(t *testing.T) {
		t.Parallel()
		st, pass := newStore(t, longTTL)
		k := func(i int) Key { return Key{Tenant: "tl", Session: fmt.Sprintf("s%d", i)} }
		for i := range 5 {
			_, err := st.Update(ctx, k(i), func(s *Session) error {
				s.Requests = int64(i)
				s.SetSlot("topic", noteSlot(fmt.Sprintf("topic %d", i)))
				s.SetSlot("intent", noteSlot("intent"))
				return nil
			})
			require.NoError(t, err)
			pass(2 * time.Millisecond)
		}
		_, err := st.Update(ctx, Key{Tenant: "other", Session: "x"}, incr)
		require.NoError(t, err)
		pass(2 * time.Millisecond)
		touched, err := st.Update(ctx, k(1), incr)
		require.NoError(t, err)

		list, err := st.List(ctx, "tl", 3)
		require.NoError(t, err)
		assert.Equal(t, []Key{k(1), k(4), k(3)}, summaryKeys(list))
		assert.Equal(t, Summary{
			ID: "s1", Tenant: "tl", CreatedAt: touched.CreatedAt, UpdatedAt: touched.UpdatedAt,
			Requests: 2, Notes: map[string]string{"topic": "topic 1", "intent": "intent"},
		}, list[0])

		list, err = st.List(ctx, "tl", 0)
		require.NoError(t, err)
		assert.Equal(t, []Key{k(1), k(4), k(3), k(2), k(0)}, summaryKeys(list))
		list, err = st.List(ctx, "", 2)
		require.NoError(t, err)
		assert.Equal(t, []Key{k(1), {Tenant: "other", Session: "x"}}, summaryKeys(list))
		list, err = st.List(ctx, "nobody", 10)
		require.NoError(t, err)
		assert.Empty(t, list)
	})

	t.Run("ListDefaultLimit", func(t *testing.T) {
		st := fresh(t)
		for i := range defaultListLimit + 5 {
			_, err := st.Update(ctx, Key{Tenant: "td", Session: fmt.Sprint(i)}, incr)
			require.NoError(t, err)
		}
		for _, limit := range []int{0, -1} {
			list, err := st.List(ctx, "td", limit)
			require.NoError(t, err)
			assert.Len(t, list, defaultListLimit, "limit %d", limit)
		}
	})

	t.Run("TTL", func(t *testing.T) {
		t.Parallel()
		const ttl = time.Second
		st, pass := newStore(t, ttl)
		a := Key{Tenant: "tt", Session: "a"}
		b := Key{Tenant: "tt", Session: "b"}
		for _, k := range []Key{a, b} {
			_, err := st.Update(ctx, k, incr)
			require.NoError(t, err)
		}
		pass(ttl * 65 / 100)
		_, err := st.Update(ctx, a, incr) // refreshes a's TTL only
		require.NoError(t, err)
		pass(ttl * 65 / 100)

		_, err = st.Get(ctx, b)
		require.ErrorIs(t, err, ErrNotFound, "b expired")
		got, err := st.Get(ctx, a)
		require.NoError(t, err, "a's TTL was refreshed")
		assert.Equal(t, int64(2), got.Requests)
		list, err := st.List(ctx, "tt", 0)
		require.NoError(t, err)
		assert.Equal(t, []Key{a}, summaryKeys(list))
		list, err = st.List(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, []Key{a}, summaryKeys(list))

		nb, err := st.Update(ctx, b, incr)
		require.NoError(t, err)
		assert.Equal(t, int64(1), nb.Version, "an expired session starts afresh")
		assert.Equal(t, int64(1), nb.Requests)

		pass(ttl + ttl/5)
		for _, k := range []Key{a, b} {
			_, err = st.Get(ctx, k)
			require.ErrorIs(t, err, ErrNotFound)
		}
		list, err = st.List(ctx, "", 0)
		require.NoError(t, err)
		assert.Empty(t, list)
	})

	t.Run("Delete", func(t *testing.T) {
		st := fresh(t)
		require.NoError(t, st.Delete(ctx, key), "deleting a missing session")
		_, err := st.Update(ctx, key, incr)
		require.NoError(t, err)
		require.NoError(t, st.Delete(ctx, key))
		_, err = st.Get(ctx, key)
		require.ErrorIs(t, err, ErrNotFound)
		list, err := st.List(ctx, key.Tenant, 0)
		require.NoError(t, err)
		assert.Empty(t, list)
		list, err = st.List(ctx, "", 0)
		require.NoError(t, err)
		assert.Empty(t, list)
		got, err := st.Update(ctx, key, incr)
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Version, "recreated after Delete")
	})

	t.Run("ConcurrentUpdatesLoseNothing", func(t *testing.T) {
		st := fresh(t)
		const workers, each = 20, 10
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					_, err := st.Update(ctx, key, func(s *Session) error {
						s.Requests++
						s.Ledger = append(s.Ledger, LedgerEntry{Kind: fmt.Sprintf("w%d-%d", w, i)})
						return nil
					})
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, int64(workers*each), got.Requests)
		assert.Equal(t, int64(workers*each), got.Version)
		assert.Len(t, got.Ledger, workers*each)
	})

	t.Run("ConcurrentKeys", func(t *testing.T) {
		st := fresh(t)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				k := Key{Tenant: "tc", Session: fmt.Sprint(w)}
				for range 10 {
					_, err := st.Update(ctx, k, incr)
					assert.NoError(t, err)
					_, err = st.Get(ctx, k)
					assert.NoError(t, err)
					_, err = st.List(ctx, "", 5)
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		list, err := st.List(ctx, "tc", 0)
		require.NoError(t, err)
		require.Len(t, list, 8)
		for _, s := range list {
			assert.Equal(t, int64(10), s.Requests)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		st := fresh(t)
		_, err := st.Update(ctx, key, incr)
		require.NoError(t, err)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		start := time.Now()
		_, err = st.Get(cctx, key)
		assert.ErrorIs(t, err, context.Canceled, "Get")
		_, err = st.Update(cctx, key, incr)
		assert.ErrorIs(t, err, context.Canceled, "Update")
		assert.ErrorIs(t, st.Delete(cctx, key), context.Canceled, "Delete")
		_, err = st.List(cctx, "", 0)
		assert.ErrorIs(t, err, context.Canceled, "List")
		assert.ErrorIs(t, st.Ping(cctx), context.Canceled, "Ping")
		assert.Less(t, time.Since(start), time.Second)

		dctx, dcancel := context.WithTimeout(ctx, -time.Second)
		defer dcancel()
		_, err = st.Get(dctx, key)
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		// A ctx that ends while fn runs stops the write.
		fctx, fcancel := context.WithCancel(ctx)
		_, err = st.Update(fctx, key, func(s *Session) error {
			s.Requests = 500
			fcancel()
			return nil
		})
		assert.ErrorIs(t, err, context.Canceled, "ctx cancelled inside fn")
		got, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Requests, "nothing written after cancellation")
	})

	t.Run("BlockedUpdateHonoursDeadline", func(t *testing.T) {
		st := fresh(t)
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			_, err := st.Update(ctx, key, func(s *Session) error {
				once.Do(func() { close(entered) })
				<-release
				s.Requests++
				return nil
			})
			done <- err
		}()
		<-entered
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := st.Update(dctx, key, incr)
		elapsed := time.Since(start)
		assert.Less(t, elapsed, 2*time.Second, "second Update returns near its deadline")
		wrote := int64(0)
		if err == nil {
			wrote = 1
		} else {
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		}
		close(release)
		require.NoError(t, <-done)
		got, err := st.Get(ctx, key)
		require.NoError(t, err)
		assert.Equal(t, 1+wrote, got.Requests)
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		st := fresh(t)
		for _, k := range []Key{
			{Tenant: "t", Session: ""},
			{Tenant: "", Session: "s"},
			{Tenant: "a:b", Session: "s"},
			{Tenant: "a{b}", Session: "s"},
			{Tenant: "a\x00b", Session: "s"},
		} {
			_, err := st.Update(ctx, k, incr)
			assert.ErrorIs(t, err, ErrInvalidKey, "%q", k)
			_, err = st.Get(ctx, k)
			assert.ErrorIs(t, err, ErrNotFound, "%q", k)
			assert.NoError(t, st.Delete(ctx, k), "%q", k)
		}
		// Session ids are free-form.
		odd := Key{Tenant: "t", Session: "a:b}{c\x00d e"}
		_, err := st.Update(ctx, odd, incr)
		require.NoError(t, err)
		got, err := st.Get(ctx, odd)
		require.NoError(t, err)
		assert.Equal(t, odd.Session, got.ID)
		list, err := st.List(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, []Key{odd}, summaryKeys(list))
	})

	t.Run("PingAndClose", func(t *testing.T) {
		t.Parallel()
		st, _ := newStore(t, longTTL)
		require.NoError(t, st.Ping(ctx))
		require.NoError(t, st.Close())
		require.NoError(t, st.Close(), "Close is idempotent")
		assert.ErrorIs(t, st.Ping(ctx), ErrClosed)
		_, err := st.Get(ctx, key)
		assert.ErrorIs(t, err, ErrClosed)
		_, err = st.Update(ctx, key, incr)
		assert.ErrorIs(t, err, ErrClosed)
		_, err = st.List(ctx, "", 0)
		assert.ErrorIs(t, err, ErrClosed)
		assert.ErrorIs(t, st.Delete(ctx, key), ErrClosed)
	})
}

// fullSession returns a session with every field set, in the form the stores
// return times (UTC, no monotonic reading).
func fullSession() *Session {
	return &Session{
		Requests: 3,
		Agent:    "claude-code",
		Model:    "claude-sonnet-4-5",
		Usage: Usage{Turns: 3, InputTokens: 120, OutputTokens: 45, CacheReadTokens: 9000,
			CacheWriteTokens: 700, CostUSD: 0.04321},
		Ledger: []LedgerEntry{{Kind: "inject", Anchor: "call_1", Root: "call_0", At: 2, Data: []byte(`{"x":1}`)}},
		Slots: Slots{
			"example": &RawSlot{V: 2, Data: json.RawMessage(`{"n":1}`), Counted: map[string]int64{"examples": 4}},
			"notes":   noteSlot("refactor"),
		},
		Routes: map[string]Route{"main": {Rule: "big", RequestedModel: "claude-opus-4-5", Model: "claude-sonnet-4-5", Upstream: "cheap"}},
	}
}

func summaryKeys(list []Summary) []Key {
	keys := []Key{}
	for _, s := range list {
		keys = append(keys, Key{Tenant: s.Tenant, Session: s.ID})
	}
	return keys
}

// noteSlot is a slot as a hook with a listing note stores it (the test
// stores keep it raw, so it compares equal after a round trip).
func noteSlot(note string) *RawSlot {
	return &RawSlot{V: 1, Data: json.RawMessage(strconv.Quote(note)), Noted: note}
}

// noteOf is the note of s's slot name ("" when it has none).
func noteOf(s *Session, name string) string {
	if n, ok := s.Slots[name].(Noter); ok {
		return n.Note()
	}
	return ""
}
