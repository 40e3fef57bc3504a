package topics

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
)

// TestCountsInListings: a session's listing counts its chapters, both with
// the slot as topics keeps it and after the slot was stored and read back
// undecoded (a RawSlot, as a replica with topics off sees it).
func TestCountsInListings(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	st := &State{Topic: "b", Chapters: []Chapter{{Title: "a", StartedAt: at}, {Title: "b", StartedAt: at}}}
	assert.Equal(t, map[string]int64{"chapters": 2}, st.Counts())
	assert.Equal(t, map[string]int64{"chapters": 0}, (&State{}).Counts())

	var sess state.Session
	sess.SetSlot(Name, st)
	b, err := json.Marshal(sess.Slots)
	require.NoError(t, err)
	var raw state.Slots
	require.NoError(t, json.Unmarshal(b, &raw))
	require.IsType(t, &state.RawSlot{}, raw[Name])

	for name, slot := range map[string]state.Slot{"decoded": st, "raw": raw[Name]} {
		m := state.NewMemory(state.MemoryOptions{JanitorInterval: -1})
		t.Cleanup(func() { _ = m.Close() })
		key := state.Key{Tenant: "t", Session: name}
		_, err := m.Update(ctx, key, func(s *state.Session) error { s.SetSlot(Name, slot); return nil })
		require.NoError(t, err)
		list, err := m.List(ctx, "t", 0)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, map[string]int64{"chapters": 2}, list[0].Counts, name)
		assert.Equal(t, "b", list[0].Notes[Name], name)
	}
}
