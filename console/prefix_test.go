package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestSessionCacheIntegrity: the session fragment shows each turn's prefix
// status from the turn engine's slot (newest first) and on the timeline's
// turns from request.finished.
func TestSessionCacheIntegrity(t *testing.T) {
	st := newFakeStore()
	key := state.Key{Tenant: "tenant1", Session: "sess-px"}
	_, err := st.Update(context.Background(), key, func(s *state.Session) error {
		s.SetSlot(turn.PrefixSlotName, &turn.PrefixState{Turns: []turn.PrefixTurn{
			{At: t0, RequestID: "r1", Hash: "00000000000000a1", First: true, BreakOffset: -1, BreakElement: -1, CacheWriteTokens: 900},
			{At: t0.Add(time.Second), RequestID: "r2", Hash: "00000000000000b2", BreakOffset: -1, BreakElement: -1, CacheReadTokens: 900, CacheWriteTokens: 120},
			{At: t0.Add(2 * time.Second), RequestID: "r3", Hash: "00000000000000c3", BreakOffset: 1234, BreakElement: 3, Cause: turn.CauseClient, CacheWriteTokens: 1500},
		}})
		return nil
	})
	require.NoError(t, err)
	st.emit(t, key, events.RequestFinished, t0.Add(time.Second), map[string]any{"status": 200, "prefix_hash": "00000000000000b2", "prefix_break_offset": -1, "prefix_break_cause": ""})
	st.emit(t, key, events.RequestFinished, t0.Add(2*time.Second), map[string]any{"status": 200, "prefix_hash": "00000000000000c3", "prefix_break_offset": 1234, "prefix_break_cause": "client"})
	st.emit(t, key, events.RequestFinished, t0.Add(3*time.Second), map[string]any{"status": 200})

	code, body, _ := get(newTestHandler(st, ""), "/console/f/sessions/sess-px?tenant=tenant1")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "Cache integrity")
	broken := `<td class="prefix-status">prefix broken at byte 1234 (client)</td>`
	intact := `<td class="prefix-status">prefix intact</td>`
	first := `<td class="prefix-status">first turn of this conversation</td>`
	require.Contains(t, body, broken)
	require.Less(t, strings.Index(body, broken), strings.Index(body, intact), "newest first")
	require.Less(t, strings.Index(body, intact), strings.Index(body, first))
	require.Contains(t, body, "900 / 120")
	require.Contains(t, body, `<span class="prefix broken">prefix broken at byte 1234 (client)</span>`)
	require.Contains(t, body, `<span class="prefix">prefix intact</span>`)
	require.Equal(t, 2, strings.Count(body, `<span class="prefix`), "a turn without a record shows none")
}
