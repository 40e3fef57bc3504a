package topics

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A long session stays within its bounds on both paths (decoded values,
// as the memory store keeps them, and stored chapters, as a serialising
// store hands them back every turn): the newest calls and chapters are
// kept, in order, and what was dropped is counted.
func TestBoundKeepsTheNewest(t *testing.T) {
	lim := Limits{Chapters: 4, Calls: 10}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var values, stored State
	var made []string
	opened := 0
	for turn := range 60 {
		var titles []string
		if turn%5 == 0 {
			opened++
			titles = []string{fmt.Sprintf("chapter %d", opened)}
		}
		var calls []CallNote
		for k := range turn%3 + 1 {
			name := fmt.Sprintf("call-%d-%d", turn, k)
			calls = append(calls, CallNote{Name: name, At: at})
			made = append(made, name)
		}
		values.record(titles, calls, at, lim)

		data, err := stored.AppendSlotJSON(nil)
		require.NoError(t, err)
		stored = State{}
		require.True(t, decodeStateFast(data, &stored))
		stored.record(titles, calls, at, lim)
		require.NoError(t, stored.decodeStoredChapters())
		require.Equal(t, values, stored, "turn %d", turn)

		require.LessOrEqual(t, len(values.Chapters), lim.Chapters)
		require.Equal(t, int64(opened), values.ChaptersDropped+int64(len(values.Chapters)), "turn %d", turn)
		var kept []string
		for _, c := range values.Chapters {
			for _, n := range c.Calls {
				kept = append(kept, n.Name)
			}
		}
		require.LessOrEqual(t, len(kept), lim.Calls)
		require.Equal(t, made[len(made)-len(kept):], kept, "the newest calls, in order (turn %d)", turn)
		require.Equal(t, int64(len(made)), values.CallsDropped+int64(len(kept)))
		require.Equal(t, fmt.Sprintf("chapter %d", opened), values.Topic)
	}
	require.Positive(t, values.ChaptersDropped)
	require.Positive(t, values.CallsDropped)
}

// Past a bound, a trim keeps three quarters of it, so the next trims wait
// for a quarter bound of new calls.
func TestBoundTrimsToThreeQuarters(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var s State
	lim := Limits{Chapters: 8, Calls: 100}
	for i := range 100 {
		s.record(nil, []CallNote{{Name: fmt.Sprint(i), At: at}}, at, lim)
	}
	require.Len(t, s.Chapters[0].Calls, 100, "at the bound: nothing dropped")
	s.record(nil, []CallNote{{Name: "100", At: at}}, at, lim)
	require.Len(t, s.Chapters[0].Calls, 75)
	require.Equal(t, int64(26), s.CallsDropped)
	require.Equal(t, "26", s.Chapters[0].Calls[0].Name)

	for i := range 8 {
		s.record([]string{fmt.Sprint("t", i)}, nil, at, lim)
	}
	require.Len(t, s.Chapters, 6, "9 chapters past a bound of 8: 6 kept")
	require.Equal(t, int64(3), s.ChaptersDropped)
	require.Equal(t, int64(26+75), s.CallsDropped, "the untitled chapter's calls went with it")
	require.Equal(t, "t2", s.Chapters[0].Title)
}

// The hook bounds what it records with the configured limits.
func TestHookBoundsTheSlot(t *testing.T) {
	h := New(Options{Limits: Limits{Calls: 4}})
	require.Equal(t, DefaultMaxChapters, h.cfg.Limits.Chapters)
	s := &State{}
	for range 5 {
		s.record(nil, []CallNote{{Name: "Read"}}, time.Time{}, h.cfg.Limits)
	}
	require.Len(t, s.Chapters[0].Calls, 3)
	require.Equal(t, int64(2), s.CallsDropped)
}
