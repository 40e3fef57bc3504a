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

// journalStore is a store with an edit journal.
type journalStore interface {
	Store
	EditJournal
}

// journalHarness is a fresh store, closed by t.Cleanup, with its clock
// (as feedHarness).
type journalHarness struct {
	st   journalStore
	now  func() time.Time
	pass func(d time.Duration)
}

type journalFactory func(t *testing.T, ttl time.Duration) journalHarness

// edit returns an entry of path written by call.
func edit(path, call string) EditRecord {
	return EditRecord{Path: path, Tool: "Write", CallID: call, Operation: EditModify, Status: EditApplied}
}

// seqs returns the Seq of each entry.
func seqs(recs []EditRecord) []int64 {
	out := []int64{}
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

// runJournalContract checks the EditJournal contract (journal.go) against
// the stores newStore makes.
func runJournalContract(t *testing.T, newStore journalFactory) {
	ctx := context.Background()
	ka := Key{Tenant: "t1", Session: "a"}
	kb := Key{Tenant: "t1", Session: "b"}
	fresh := func(t *testing.T, ttl time.Duration) journalHarness {
		t.Parallel()
		if ttl == 0 {
			ttl = longTTL
		}
		return newStore(t, ttl)
	}
	appendOK := func(t *testing.T, st EditJournal, k Key, keep int, recs ...EditRecord) []EditRecord {
		t.Helper()
		got, err := st.AppendEdits(ctx, k, keep, recs)
		require.NoError(t, err)
		require.Len(t, got, len(recs))
		return got
	}
	editsOK := func(t *testing.T, st EditJournal, k Key, path string) []EditRecord {
		t.Helper()
		got, err := st.Edits(ctx, k, path)
		require.NoError(t, err)
		require.NotNil(t, got, "an empty journal is [], not nil")
		return got
	}

	t.Run("SeqAndRoundTrip", func(t *testing.T) {
		h := fresh(t, 0)
		before, after := "a\nb\n", "a\nc\n"
		at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.FixedZone("x", 3600))
		full := EditRecord{
			Seq: 99, At: at, Path: "/w/main.go", Tool: "Edit", CallID: "toolu_1", Operation: EditModify,
			Status: EditRefused, Reason: "policy", Chapter: "ch-2", Intent: "fix the bug",
			Diff: "--- a/w/main.go\n+++ b/w/main.go\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", Before: &before, After: &after,
			BeforeKnown: true, Size: 42,
		}
		got := appendOK(t, h.st, ka, 10, full, edit("/w/x.go", "toolu_2"))
		assert.Equal(t, []int64{1, 2}, seqs(got), "seqs from 1; the caller's ignored")
		want := full
		want.Seq, want.At = 1, at.UTC()
		assert.Equal(t, want, got[0])
		assert.Equal(t, EditApplied, got[1].Status)
		assert.False(t, got[1].At.IsZero(), "a zero At is the store's time")

		stored, err := h.st.Edit(ctx, ka, 1)
		require.NoError(t, err)
		assert.Equal(t, want, stored, "every field round-trips")
		assert.True(t, stored.At.Equal(at))
		stored, err = h.st.Edit(ctx, ka, 2)
		require.NoError(t, err)
		assert.Equal(t, got[1], stored)
		assert.Nil(t, stored.Before)
		assert.Nil(t, stored.After)
		assert.False(t, stored.BeforeKnown)

		// Stored entries are not aliased by what the caller holds.
		before = "changed"
		*got[0].After = "changed"
		stored, err = h.st.Edit(ctx, ka, 1)
		require.NoError(t, err)
		assert.Equal(t, "a\nb\n", *stored.Before)
		assert.Equal(t, "a\nc\n", *stored.After)

		got = appendOK(t, h.st, ka, 10, edit("/w/y.go", ""))
		assert.Equal(t, []int64{3}, seqs(got), "the next append continues")
		got = appendOK(t, h.st, kb, 10, edit("/w/y.go", ""))
		assert.Equal(t, []int64{1}, seqs(got), "each session numbers its own")
		got = appendOK(t, h.st, Key{Tenant: "t2", Session: "a"}, 10, edit("/w/y.go", ""))
		assert.Equal(t, []int64{1}, seqs(got), "same session id, other tenant")

		none, err := h.st.AppendEdits(ctx, ka, 10, nil)
		require.NoError(t, err)
		assert.Empty(t, none, "appending nothing is fine")
		got = appendOK(t, h.st, ka, 10, edit("/w/z.go", ""))
		assert.Equal(t, []int64{4}, seqs(got), "and uses no seq")
	})

	t.Run("PerPathFIFO", func(t *testing.T) {
		h := fresh(t, 0)
		for i := range 5 {
			appendOK(t, h.st, ka, 3, edit("a.go", fmt.Sprint("ca", i)), edit("b.go", fmt.Sprint("cb", i)))
		}
		// a.go has seqs 1,3,5,7,9; b.go 2,4,6,8,10.
		assert.Equal(t, []int64{5, 7, 9}, seqs(editsOK(t, h.st, ka, "a.go")), "the newest keep of a.go")
		assert.Equal(t, []int64{6, 8, 10}, seqs(editsOK(t, h.st, ka, "b.go")))
		assert.Equal(t, []int64{5, 6, 7, 8, 9, 10}, seqs(editsOK(t, h.st, ka, "")), "oldest first")
		for _, dropped := range []int64{1, 2, 3, 4, 11, 0, -1} {
			_, err := h.st.Edit(ctx, ka, dropped)
			assert.ErrorIs(t, err, ErrNotFound, "seq %d", dropped)
		}
		n, err := h.st.SetEditStatus(ctx, ka, "ca0", EditFailed, "x")
		require.NoError(t, err)
		assert.Zero(t, n, "a dropped entry's call id is forgotten")

		// One append larger than keep keeps its newest.
		appendOK(t, h.st, ka, 2, edit("c.go", "1"), edit("c.go", "2"), edit("c.go", "3"))
		assert.Equal(t, []int64{12, 13}, seqs(editsOK(t, h.st, ka, "c.go")))
		// A smaller keep later trims the path it appends to, only.
		appendOK(t, h.st, ka, 1, edit("a.go", "z"))
		assert.Equal(t, []int64{14}, seqs(editsOK(t, h.st, ka, "a.go")))
		assert.Equal(t, []int64{6, 8, 10}, seqs(editsOK(t, h.st, ka, "b.go")))
		// keep <= 0 is DefaultEditKeep.
		for range DefaultEditKeep + 2 {
			appendOK(t, h.st, ka, 0, edit("d.go", ""))
		}
		assert.Len(t, editsOK(t, h.st, ka, "d.go"), DefaultEditKeep)
	})

	t.Run("SessionCap", func(t *testing.T) {
		h := fresh(t, 0)
		batch := make([]EditRecord, 0, 600)
		for i := range 600 {
			batch = append(batch, edit(fmt.Sprintf("f%d.go", i%300), fmt.Sprint("c", i%7)))
		}
		appendOK(t, h.st, ka, 10, batch...)
		appendOK(t, h.st, ka, 10, batch[:405]...)
		all := editsOK(t, h.st, ka, "")
		require.Len(t, all, MaxEditsPerSession)
		assert.Equal(t, int64(6), all[0].Seq, "the oldest went")
		assert.Equal(t, int64(1005), all[len(all)-1].Seq)
		for i := 1; i < len(all); i++ {
			require.Equal(t, all[i-1].Seq+1, all[i].Seq)
		}
		_, err := h.st.Edit(ctx, ka, 5)
		assert.ErrorIs(t, err, ErrNotFound)
		got, err := h.st.Edit(ctx, ka, 6)
		require.NoError(t, err)
		assert.Equal(t, "f5.go", got.Path)
		assert.Equal(t, []int64{305, 605, 905}, seqs(editsOK(t, h.st, ka, "f4.go")), "the path index lost the trimmed entry")
	})

	t.Run("SetEditStatusByCall", func(t *testing.T) {
		h := fresh(t, 0)
		appendOK(t, h.st, ka, 10, edit("a.go", "multi"), edit("b.go", "multi"), edit("c.go", "other"))
		appendOK(t, h.st, kb, 10, edit("a.go", "multi"))
		n, err := h.st.SetEditStatus(ctx, ka, "multi", EditFailed, "no such file")
		require.NoError(t, err)
		assert.Equal(t, 2, n, "every path of the call")
		all := editsOK(t, h.st, ka, "")
		require.Len(t, all, 3)
		for _, rec := range all[:2] {
			assert.Equal(t, EditFailed, rec.Status)
			assert.Equal(t, "no such file", rec.Reason)
		}
		assert.Equal(t, EditApplied, all[2].Status)
		assert.Empty(t, all[2].Reason)
		got, err := h.st.Edit(ctx, ka, 2)
		require.NoError(t, err)
		assert.Equal(t, EditFailed, got.Status, "Edit sees it too")
		other := editsOK(t, h.st, kb, "")
		assert.Equal(t, EditApplied, other[0].Status, "another session's call of the same id")

		n, err = h.st.SetEditStatus(ctx, ka, "multi", EditApplied, "")
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		got, err = h.st.Edit(ctx, ka, 1)
		require.NoError(t, err)
		assert.Equal(t, EditApplied, got.Status)
		assert.Empty(t, got.Reason, "the reason is replaced")

		for _, call := range []string{"unknown", ""} {
			n, err = h.st.SetEditStatus(ctx, ka, call, EditFailed, "x")
			require.NoError(t, err)
			assert.Zero(t, n, "call %q", call)
		}
		n, err = h.st.SetEditStatus(ctx, Key{Tenant: "t1", Session: "none"}, "multi", EditFailed, "x")
		require.NoError(t, err)
		assert.Zero(t, n, "an unknown session")
		_, err = h.st.SetEditStatus(ctx, ka, "multi", "bogus", "")
		assert.ErrorContains(t, err, "unknown edit status")

		// A trimmed entry of the call is no longer counted.
		appendOK(t, h.st, ka, 1, edit("a.go", "later"))
		n, err = h.st.SetEditStatus(ctx, ka, "multi", EditRefused, "r")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		got, err = h.st.Edit(ctx, ka, 4)
		require.NoError(t, err)
		assert.Equal(t, EditApplied, got.Status, "the newer entry of the path is not the call's")
	})

	t.Run("EditsFilterAndOrder", func(t *testing.T) {
		h := fresh(t, 0)
		appendOK(t, h.st, ka, 10, edit("x/a.go", "1"), edit("b.go", "2"))
		appendOK(t, h.st, ka, 10, edit("x/a.go", "3"))
		appendOK(t, h.st, ka, 10, edit("c d.go", "4"), edit("b.go", "5"))
		all := editsOK(t, h.st, ka, "")
		assert.Equal(t, []int64{1, 2, 3, 4, 5}, seqs(all))
		assert.Equal(t, []string{"x/a.go", "b.go", "x/a.go", "c d.go", "b.go"},
			[]string{all[0].Path, all[1].Path, all[2].Path, all[3].Path, all[4].Path})
		assert.Equal(t, []int64{1, 3}, seqs(editsOK(t, h.st, ka, "x/a.go")))
		assert.Equal(t, []int64{2, 5}, seqs(editsOK(t, h.st, ka, "b.go")))
		assert.Equal(t, []int64{4}, seqs(editsOK(t, h.st, ka, "c d.go")))
		assert.Empty(t, editsOK(t, h.st, ka, "x"), "no prefix match")
		assert.Empty(t, editsOK(t, h.st, ka, "nope.go"))
		assert.Empty(t, editsOK(t, h.st, kb, ""), "a session without a journal")
		_, err := h.st.Edit(ctx, kb, 1)
		assert.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		h := fresh(t, 0)
		for _, k := range []Key{{}, {Tenant: "t"}, {Session: "s"}, {Tenant: "a:b", Session: "s"}, {Tenant: "a{b", Session: "s"}, {Tenant: "a}", Session: "s"}, {Tenant: "a\x00", Session: "s"}} {
			_, err := h.st.AppendEdits(ctx, k, 10, []EditRecord{edit("a", "c")})
			assert.ErrorIs(t, err, ErrInvalidKey, "%q", k)
			_, err = h.st.SetEditStatus(ctx, k, "c", EditFailed, "")
			assert.ErrorIs(t, err, ErrInvalidKey, "%q", k)
			_, err = h.st.Edits(ctx, k, "")
			assert.ErrorIs(t, err, ErrNotFound, "%q", k)
			assert.ErrorIs(t, err, ErrInvalidKey, "%q", k)
			_, err = h.st.Edit(ctx, k, 1)
			assert.ErrorIs(t, err, ErrNotFound, "%q", k)
			assert.ErrorIs(t, err, ErrInvalidKey, "%q", k)
		}
	})

	t.Run("DeleteDropsJournal", func(t *testing.T) {
		h := fresh(t, 0)
		_, err := h.st.Update(ctx, ka, func(s *Session) error { s.Requests++; return nil })
		require.NoError(t, err)
		appendOK(t, h.st, ka, 10, edit("a.go", "c"))
		appendOK(t, h.st, kb, 10, edit("a.go", "c"))
		require.NoError(t, h.st.Delete(ctx, ka))
		assert.Empty(t, editsOK(t, h.st, ka, ""))
		_, err = h.st.Edit(ctx, ka, 1)
		assert.ErrorIs(t, err, ErrNotFound)
		assert.Len(t, editsOK(t, h.st, kb, ""), 1, "other sessions keep theirs")
		got := appendOK(t, h.st, ka, 10, edit("a.go", "c"))
		assert.Equal(t, int64(1), got[0].Seq, "a new journal after Delete")
	})

	t.Run("ExpiresSinceLastAppend", func(t *testing.T) {
		ttl := time.Second
		h := fresh(t, ttl)
		appendOK(t, h.st, ka, 10, edit("a.go", "c1"))
		h.pass(ttl * 6 / 10)
		appendOK(t, h.st, ka, 10, edit("b.go", "c2"))
		h.pass(ttl * 7 / 10) // past the first append's TTL, not the second's
		n, err := h.st.SetEditStatus(ctx, ka, "c1", EditFailed, "")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, []int64{1, 2}, seqs(editsOK(t, h.st, ka, "")), "an append refreshes the TTL of the whole journal")
		h.pass(ttl * 8 / 10)
		assert.Empty(t, editsOK(t, h.st, ka, ""), "expired TTL after the last append (SetEditStatus does not refresh it)")
		_, err = h.st.Edit(ctx, ka, 2)
		assert.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("ConcurrentAppendsNeverReuseASeq", func(t *testing.T) {
		h := fresh(t, 0)
		const workers, rounds = 8, 15
		var (
			mu   sync.Mutex
			seen = map[int64]bool{}
			wg   sync.WaitGroup
		)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range rounds {
					got, err := h.st.AppendEdits(ctx, ka, 1000, []EditRecord{
						edit(fmt.Sprintf("w%d.go", w), fmt.Sprint(w, "-", i)), edit(fmt.Sprintf("v%d.go", w), fmt.Sprint(w, "-", i)),
					})
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					for _, r := range got {
						assert.False(t, seen[r.Seq], "seq %d given twice", r.Seq)
						seen[r.Seq] = true
					}
					assert.Equal(t, got[0].Seq+1, got[1].Seq, "one append's seqs are consecutive")
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		all := editsOK(t, h.st, ka, "")
		require.Len(t, all, 2*workers*rounds)
		for i, r := range all {
			assert.Equal(t, int64(i+1), r.Seq)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		h := fresh(t, 0)
		require.NoError(t, h.st.Close())
		_, err := h.st.AppendEdits(ctx, ka, 10, []EditRecord{edit("a", "c")})
		assert.ErrorIs(t, err, ErrClosed)
		_, err = h.st.Edits(ctx, ka, "")
		assert.ErrorIs(t, err, ErrClosed)
	})
}
