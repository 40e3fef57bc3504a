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

// feedStore is a store with the live feed's parts: the event log and the
// approvals.
type feedStore interface {
	Store
	EventLog
	Approvals
}

// feedOptions configure a store made by a feedFactory (zero: defaults and
// longTTL).
type feedOptions struct {
	ttl              time.Duration
	perSession, glob int
}

// feedHarness is a fresh store, closed by t.Cleanup, with its clock: now
// reads it, pass lets d of it pass. fakeClock is true when pass is free
// (a fake clock), so a subtest may let minutes pass.
type feedHarness struct {
	st        feedStore
	now       func() time.Time
	pass      func(d time.Duration)
	fakeClock bool
}

type feedFactory func(t *testing.T, o feedOptions) feedHarness

// runFeedContract checks the EventLog (eventlog.go) and Approvals
// (approvals.go) contracts against the stores newStore makes.
func runFeedContract(t *testing.T, newStore feedFactory) {
	ctx := context.Background()
	ka := Key{Tenant: "t1", Session: "a"}
	kb := Key{Tenant: "t1", Session: "b"}
	fresh := func(t *testing.T, o feedOptions) feedHarness {
		t.Parallel()
		if o.ttl == 0 {
			o.ttl = longTTL
		}
		return newStore(t, o)
	}
	recs := func(prefix string, from, to int) [][]byte {
		var out [][]byte
		for i := from; i < to; i++ {
			out = append(out, fmt.Appendf(nil, `{"e":"%s%d"}`, prefix, i))
		}
		return out
	}
	datas := func(rs []EventRecord) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, string(r.Data))
		}
		return out
	}
	strs := func(bs [][]byte) []string {
		out := []string{}
		for _, b := range bs {
			out = append(out, string(b))
		}
		return out
	}
	increasing := func(t *testing.T, rs []EventRecord) {
		t.Helper()
		for i := range rs {
			_, ok := parseEventID(rs[i].ID)
			require.True(t, ok, "id %q is <ms>-<seq>", rs[i].ID)
			if i > 0 {
				require.Equal(t, -1, CompareEventIDs(rs[i-1].ID, rs[i].ID), "ids %q then %q", rs[i-1].ID, rs[i].ID)
			}
		}
	}

	t.Run("EventsInOrder", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 0, 3)))
		h.pass(time.Millisecond)
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 3, 5)))
		require.NoError(t, h.st.AppendEvents(ctx, ka, nil), "appending nothing is fine")
		got, err := h.st.SessionEvents(ctx, ka, "", 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 0, 5)), datas(got))
		increasing(t, got)
		all, err := h.st.AllEvents(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 0, 5)), datas(all))
		increasing(t, all)

		none, err := h.st.SessionEvents(ctx, kb, "", 0)
		require.NoError(t, err)
		assert.Empty(t, none, "a session without events")
	})

	t.Run("EventsBoundedNewestKept", func(t *testing.T) {
		h := fresh(t, feedOptions{perSession: 5, glob: 8})
		for i := range 7 {
			require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", i, i+1)))
		}
		require.NoError(t, h.st.AppendEvents(ctx, kb, recs("b", 0, 3)))
		got, err := h.st.SessionEvents(ctx, ka, "", 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 2, 7)), datas(got), "the newest perSession of a")
		all, err := h.st.AllEvents(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, append(strs(recs("a", 2, 7)), strs(recs("b", 0, 3))...), datas(all), "the newest global")
		increasing(t, all)

		// One append larger than the bound keeps its newest records.
		require.NoError(t, h.st.AppendEvents(ctx, kb, recs("c", 0, 12)))
		got, err = h.st.SessionEvents(ctx, kb, "", 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("c", 7, 12)), datas(got))
		all, err = h.st.AllEvents(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("c", 4, 12)), datas(all))
	})

	t.Run("EventsResumeAfter", func(t *testing.T) {
		h := fresh(t, feedOptions{perSession: 10})
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 0, 7)))
		var seen []EventRecord
		after := ""
		for range 10 {
			page, err := h.st.SessionEvents(ctx, ka, after, 3)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			assert.LessOrEqual(t, len(page), 3)
			seen = append(seen, page...)
			after = page[len(page)-1].ID
		}
		assert.Equal(t, strs(recs("a", 0, 7)), datas(seen), "pages resume exactly after the cursor")
		increasing(t, seen)

		// New records arrive after the cursor.
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 7, 9)))
		page, err := h.st.SessionEvents(ctx, ka, after, 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 7, 9)), datas(page))

		// A cursor older than everything kept reads from the oldest kept.
		dropped := seen[0].ID
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 9, 12)))
		page, err = h.st.SessionEvents(ctx, ka, dropped, 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 2, 12)), datas(page))
		page, err = h.st.SessionEvents(ctx, ka, "0-0", 2)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 2, 4)), datas(page))

		// The global log resumes the same way, with its own ids.
		all, err := h.st.AllEvents(ctx, "", 5)
		require.NoError(t, err)
		require.Len(t, all, 5)
		rest, err := h.st.AllEvents(ctx, all[4].ID, 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 5, 12)), datas(rest))

		for _, bad := range []string{"x", "1-", "-1", "1-2-3", "12"} {
			_, err := h.st.SessionEvents(ctx, ka, bad, 0)
			assert.ErrorIs(t, err, ErrInvalidEventID, bad)
			_, err = h.st.AllEvents(ctx, bad, 0)
			assert.ErrorIs(t, err, ErrInvalidEventID, bad)
		}
	})

	t.Run("EventsGlobalAndSession", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		kc := Key{Tenant: "t2", Session: "a"} // same session id, other tenant
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 0, 1)))
		require.NoError(t, h.st.AppendEvents(ctx, kb, recs("b", 0, 2)))
		require.NoError(t, h.st.AppendEvents(ctx, kc, recs("c", 0, 1)))
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 1, 2)))
		for k, want := range map[Key][]string{ka: strs(recs("a", 0, 2)), kb: strs(recs("b", 0, 2)), kc: strs(recs("c", 0, 1))} {
			got, err := h.st.SessionEvents(ctx, k, "", 0)
			require.NoError(t, err)
			assert.Equal(t, want, datas(got), "%v", k)
		}
		all, err := h.st.AllEvents(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, []string{`{"e":"a0"}`, `{"e":"b0"}`, `{"e":"b1"}`, `{"e":"c0"}`, `{"e":"a1"}`}, datas(all))
		increasing(t, all)
	})

	t.Run("EventsExpireSinceLastAppend", func(t *testing.T) {
		ttl := time.Second
		h := fresh(t, feedOptions{ttl: ttl})
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 0, 1)))
		h.pass(ttl * 6 / 10)
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 1, 2)))
		h.pass(ttl * 7 / 10) // past the first append's TTL, not the second's
		got, err := h.st.SessionEvents(ctx, ka, "", 0)
		require.NoError(t, err)
		assert.Equal(t, strs(recs("a", 0, 2)), datas(got), "an append refreshes the TTL")
		h.pass(ttl * 8 / 10)
		got, err = h.st.SessionEvents(ctx, ka, "", 0)
		require.NoError(t, err)
		assert.Empty(t, got, "expired TTL after the last append")
	})

	t.Run("DeleteDropsEventsAndApprovals", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		_, err := h.st.Update(ctx, ka, func(s *Session) error { s.Requests++; return nil })
		require.NoError(t, err)
		require.NoError(t, h.st.AppendEvents(ctx, ka, recs("a", 0, 2)))
		require.NoError(t, h.st.AppendEvents(ctx, kb, recs("b", 0, 1)))
		require.NoError(t, h.st.HoldApproval(ctx, ka, testApproval("x", h.now(), time.Hour)))
		require.NoError(t, h.st.Delete(ctx, ka))
		got, err := h.st.SessionEvents(ctx, ka, "", 0)
		require.NoError(t, err)
		assert.Empty(t, got)
		_, err = h.st.GetApproval(ctx, ka, "x")
		assert.ErrorIs(t, err, ErrNotFound)
		pending, err := h.st.PendingApprovals(ctx, "", 0)
		require.NoError(t, err)
		assert.Empty(t, pending)
		got, err = h.st.SessionEvents(ctx, kb, "", 0)
		require.NoError(t, err)
		assert.Len(t, got, 1, "other sessions keep theirs")
		all, err := h.st.AllEvents(ctx, "", 0)
		require.NoError(t, err)
		assert.Len(t, all, 3, "the global log is a history: it keeps a deleted session's records until they age out")
	})

	t.Run("ApprovalHoldAndGet", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		a := testApproval("call-hash-1", h.now(), time.Minute)
		a.Session, a.Tenant = "ignored", "ignored"
		a.Decision, a.By = ApprovalApproved, "sneaky"
		require.NoError(t, h.st.HoldApproval(ctx, ka, a))
		got, err := h.st.GetApproval(ctx, ka, a.ID)
		require.NoError(t, err)
		want := a
		want.Session, want.Tenant = ka.Session, ka.Tenant
		want.Decision, want.By = ApprovalPending, ""
		assert.Equal(t, want, got, "held as pending, under the key")

		_, err = h.st.GetApproval(ctx, kb, a.ID)
		assert.ErrorIs(t, err, ErrNotFound, "another session's")
		_, err = h.st.GetApproval(ctx, Key{Tenant: "t2", Session: ka.Session}, a.ID)
		assert.ErrorIs(t, err, ErrNotFound, "another tenant's")

		a.Reason = "replaced"
		require.NoError(t, h.st.HoldApproval(ctx, ka, a))
		got, err = h.st.GetApproval(ctx, ka, a.ID)
		require.NoError(t, err)
		assert.Equal(t, "replaced", got.Reason, "holding again replaces")
		assert.ErrorContains(t, h.st.HoldApproval(ctx, ka, Approval{}), "without an id")
	})

	t.Run("ApprovalDecide", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		a := testApproval("c1", h.now(), time.Minute)
		require.NoError(t, h.st.HoldApproval(ctx, ka, a))
		h.pass(time.Millisecond)
		d, err := h.st.DecideApproval(ctx, ka, "c1", ApprovalDenied, "console", "not now")
		require.NoError(t, err)
		assert.Equal(t, ApprovalDenied, d.Decision)
		assert.Equal(t, "console", d.By)
		assert.Equal(t, "not now", d.Note)
		assert.False(t, d.DecidedAt.Before(a.HeldAt))
		got, err := h.st.GetApproval(ctx, ka, "c1")
		require.NoError(t, err)
		assert.Equal(t, d, got, "Get returns it as decided")

		_, err = h.st.DecideApproval(ctx, ka, "c1", ApprovalApproved, "api", "")
		assert.ErrorIs(t, err, ErrDecided, "a decision is final")
		_, err = h.st.DecideApproval(ctx, ka, "unknown", ApprovalApproved, "api", "")
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = h.st.GetApproval(ctx, ka, "unknown")
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = h.st.DecideApproval(ctx, ka, "c1", "maybe", "api", "")
		assert.ErrorContains(t, err, "neither")
		assert.NotErrorIs(t, err, ErrDecided)
	})

	t.Run("ApprovalDecideRace", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		for i := range 20 {
			id := fmt.Sprintf("race-%d", i)
			require.NoError(t, h.st.HoldApproval(ctx, ka, testApproval(id, h.now(), time.Minute)))
			var wg sync.WaitGroup
			errs := make([]error, 2)
			decided := make([]Approval, 2)
			start := make(chan struct{})
			for g, decision := range []string{ApprovalApproved, ApprovalDenied} {
				wg.Go(func() {
					<-start
					decided[g], errs[g] = h.st.DecideApproval(ctx, ka, id, decision, fmt.Sprint("by-", g), "")
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for g, err := range errs {
				if err == nil {
					require.Equal(t, -1, winner, "%s: both decisions won", id)
					winner = g
				} else {
					require.ErrorIs(t, err, ErrDecided, id)
				}
			}
			require.NotEqual(t, -1, winner, "%s: neither decision won", id)
			got, err := h.st.GetApproval(ctx, ka, id)
			require.NoError(t, err)
			assert.Equal(t, decided[winner], got, "%s: the stored decision is the winner's", id)
		}
	})

	t.Run("ApprovalExpiry", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		a := testApproval("late", h.now(), 300*time.Millisecond)
		require.NoError(t, h.st.HoldApproval(ctx, ka, a))
		pending, err := h.st.PendingApprovals(ctx, "", 0)
		require.NoError(t, err)
		require.Len(t, pending, 1)
		h.pass(400 * time.Millisecond)
		_, err = h.st.DecideApproval(ctx, ka, "late", ApprovalApproved, "console", "")
		assert.ErrorIs(t, err, ErrDecided, "past ExpiresAt")
		pending, err = h.st.PendingApprovals(ctx, "", 0)
		require.NoError(t, err)
		assert.Empty(t, pending, "an expired approval is not pending")
		got, err := h.st.GetApproval(ctx, ka, "late")
		require.NoError(t, err, "kept a while after ExpiresAt")
		assert.Equal(t, ApprovalPending, got.Decision)
		_, err = h.st.DecideApproval(ctx, ka, "late", ApprovalDenied, "console", "")
		assert.ErrorIs(t, err, ErrDecided, "a person's denial past ExpiresAt")
		_, err = h.st.DecideApproval(ctx, ka, "late", ApprovalApproved, ApprovalByTimeout, "")
		assert.ErrorIs(t, err, ErrDecided, "only a denial records the expiry")
		got, err = h.st.DecideApproval(ctx, ka, "late", ApprovalDenied, ApprovalByTimeout, "")
		require.NoError(t, err, "the holder records the expiry however late")
		assert.Equal(t, ApprovalDenied, got.Decision)
		_, err = h.st.DecideApproval(ctx, ka, "late", ApprovalDenied, ApprovalByTimeout, "")
		assert.ErrorIs(t, err, ErrDecided, "once")
		if h.fakeClock {
			h.pass(ApprovalRetention)
			_, err = h.st.GetApproval(ctx, ka, "late")
			assert.ErrorIs(t, err, ErrNotFound, "dropped after the retention")
			_, err = h.st.DecideApproval(ctx, ka, "late", ApprovalApproved, "console", "")
			assert.ErrorIs(t, err, ErrNotFound)
		}
	})

	t.Run("PendingApprovals", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		kc := Key{Tenant: "t2", Session: "a"}
		t0 := h.now()
		hold := func(k Key, id string, heldAfter time.Duration) {
			a := testApproval(id, t0.Add(heldAfter), time.Hour)
			require.NoError(t, h.st.HoldApproval(ctx, k, a))
		}
		hold(kb, "b-2", 2*time.Second)
		hold(kc, "c-1", time.Second)
		hold(ka, "a-3", 3*time.Second)
		hold(ka, "a-0", 0)
		hold(ka, "a-done", 0)
		_, err := h.st.DecideApproval(ctx, ka, "a-done", ApprovalApproved, "api", "")
		require.NoError(t, err)

		ids := func(as []Approval) []string {
			out := []string{}
			for _, a := range as {
				out = append(out, a.Session+"/"+a.ID)
			}
			return out
		}
		all, err := h.st.PendingApprovals(ctx, "", 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"a/a-0", "a/c-1", "b/b-2", "a/a-3"}, ids(all), "undecided, oldest first")
		t1, err := h.st.PendingApprovals(ctx, "t1", 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"a/a-0", "b/b-2", "a/a-3"}, ids(t1), "one tenant's")
		for _, a := range t1 {
			assert.Equal(t, "t1", a.Tenant)
		}
		t2, err := h.st.PendingApprovals(ctx, "t2", 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"a/c-1"}, ids(t2))
		none, err := h.st.PendingApprovals(ctx, "t3", 0)
		require.NoError(t, err)
		assert.Empty(t, none)
		two, err := h.st.PendingApprovals(ctx, "", 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"a/a-0", "a/c-1"}, ids(two), "limit")
	})

	t.Run("FeedInvalidKeys", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		for _, k := range []Key{{}, {Tenant: "t"}, {Session: "s"}, {Tenant: "a:b", Session: "s"}, {Tenant: "{x}", Session: "s"}} {
			assert.ErrorIs(t, h.st.AppendEvents(ctx, k, recs("a", 0, 1)), ErrInvalidKey, "%v", k)
			_, err := h.st.SessionEvents(ctx, k, "", 0)
			assert.ErrorIs(t, err, ErrInvalidKey, "%v", k)
			assert.ErrorIs(t, h.st.HoldApproval(ctx, k, testApproval("x", h.now(), time.Minute)), ErrInvalidKey, "%v", k)
			_, err = h.st.DecideApproval(ctx, k, "x", ApprovalApproved, "api", "")
			assert.ErrorIs(t, err, ErrInvalidKey, "%v", k)
			assert.ErrorIs(t, err, ErrNotFound, "%v", k)
			_, err = h.st.GetApproval(ctx, k, "x")
			assert.ErrorIs(t, err, ErrInvalidKey, "%v", k)
			assert.ErrorIs(t, err, ErrNotFound, "%v", k)
		}
		all, err := h.st.AllEvents(ctx, "", 0)
		require.NoError(t, err)
		assert.Empty(t, all, "nothing was appended")
	})

	t.Run("FeedClosed", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		require.NoError(t, h.st.Close())
		assert.ErrorIs(t, h.st.AppendEvents(ctx, ka, recs("a", 0, 1)), ErrClosed)
		_, err := h.st.SessionEvents(ctx, ka, "", 0)
		assert.ErrorIs(t, err, ErrClosed)
		_, err = h.st.AllEvents(ctx, "", 0)
		assert.ErrorIs(t, err, ErrClosed)
		assert.ErrorIs(t, h.st.HoldApproval(ctx, ka, testApproval("x", h.now(), time.Minute)), ErrClosed)
		_, err = h.st.DecideApproval(ctx, ka, "x", ApprovalApproved, "api", "")
		assert.ErrorIs(t, err, ErrClosed)
		_, err = h.st.GetApproval(ctx, ka, "x")
		assert.ErrorIs(t, err, ErrClosed)
		_, err = h.st.PendingApprovals(ctx, "", 0)
		assert.ErrorIs(t, err, ErrClosed)
	})

	t.Run("FeedCancelledContext", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		assert.ErrorIs(t, h.st.AppendEvents(cctx, ka, recs("a", 0, 1)), context.Canceled)
		_, err := h.st.SessionEvents(cctx, ka, "", 0)
		assert.ErrorIs(t, err, context.Canceled)
		_, err = h.st.AllEvents(cctx, "", 0)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, h.st.HoldApproval(cctx, ka, testApproval("x", h.now(), time.Minute)), context.Canceled)
		_, err = h.st.DecideApproval(cctx, ka, "x", ApprovalApproved, "api", "")
		assert.ErrorIs(t, err, context.Canceled)
		_, err = h.st.PendingApprovals(cctx, "", 0)
		assert.ErrorIs(t, err, context.Canceled)
	})

	t.Run("SummaryCarriesUsageAndCounts", func(t *testing.T) {
		h := fresh(t, feedOptions{})
		usage := Usage{Turns: 2, InputTokens: 100, OutputTokens: 20, CacheReadTokens: 1000, CacheWriteTokens: 50, CostUSD: 0.0125}
		stored, err := h.st.Update(ctx, ka, func(s *Session) error {
			s.Agent, s.Model, s.Usage = "claude-code", "claude-sonnet-4-5", usage
			s.SetSlot("topics", &RawSlot{V: 1, Data: []byte(`{}`), Noted: "Fix", Counted: map[string]int64{"chapters": 3}})
			s.SetSlot("intents", &RawSlot{V: 1, Data: []byte(`{}`), Counted: map[string]int64{"refusals": 1}})
			return nil
		})
		require.NoError(t, err)
		list, err := h.st.List(ctx, "t1", 0)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, Summary{
			ID: ka.Session, Tenant: ka.Tenant, CreatedAt: stored.CreatedAt, UpdatedAt: stored.UpdatedAt, Requests: 0,
			Agent: "claude-code", Model: "claude-sonnet-4-5", Usage: usage,
			Counts: map[string]int64{"chapters": 3, "refusals": 1},
			Notes:  map[string]string{"topics": "Fix"},
		}, list[0])
		got, err := h.st.Get(ctx, ka)
		require.NoError(t, err)
		assert.Equal(t, usage, got.Usage)
		assert.Equal(t, "claude-code", got.Agent)
	})
}

// testApproval is a pending approval held at heldAt, expiring after ttl.
func testApproval(id string, heldAt time.Time, ttl time.Duration) Approval {
	heldAt = heldAt.UTC().Round(0)
	return Approval{
		ID: id, CallID: "toolu_" + id, Tool: "Bash", Args: `{"command":"rm -rf build"}`,
		Intent: "INT-001", Reason: "deletes files", Rule: "ask_bash",
		HeldAt: heldAt, ExpiresAt: heldAt.Add(ttl),
	}
}
