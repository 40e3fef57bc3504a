package turn

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

func samplePrefixState() *PrefixState {
	at := time.Date(2026, 11, 26, 10, 0, 0, 123, time.FixedZone("x", -3600))
	return &PrefixState{
		Tracks: []prefixTrack{{First: 4294967295, AgentLen: 30, AgentSum: 18446744073709551615, Upstream: packedHashes{1, 2, 3}}, {}},
		Turns: []PrefixTurn{
			{At: at, RequestID: "req-1", Hash: "00ff00ff00ff00ff", Elements: 62, First: true, BreakOffset: -1, BreakElement: -1},
			{At: at.UTC(), Hash: "x", Elements: 63, BreakOffset: 1234, BreakElement: 7, Cause: CauseClient, CacheReadTokens: 9, CacheWriteTokens: 1},
		},
		Breaks: map[string]int64{CauseProxy: 2, CauseClient: 1},
	}
}

// TestPrefixSlotCodec: the slot's own encoder writes encoding/json's
// bytes, and its decoder reads them back as encoding/json does, for a
// full state, an empty one and empty collections.
func TestPrefixSlotCodec(t *testing.T) {
	for _, s := range []*PrefixState{samplePrefixState(), {}, {Tracks: []prefixTrack{}, Turns: []PrefixTurn{}, Breaks: map[string]int64{}}} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		if len(s.Tracks) > 0 && len(s.Tracks[0].Upstream) > 0 {
			// Stored slots keep their format: the hashes as one base64
			// string of their little-endian bytes.
			require.Contains(t, string(want), `"upstream":"AQAAAAIAAAADAAAA"`)
		}
		kit.CheckSlotRoundTrip(t, s, decodePrefixFast, (*PrefixState).decodeStoredTurns, (*PrefixState).AppendSlotJSON)
	}
	st, err := decodePrefixSlot(PrefixSlotVersion, mustJSON(t, samplePrefixState()))
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Breaks[CauseProxy])
	_, err = decodePrefixSlot(PrefixSlotVersion+1, []byte(`{}`))
	require.Error(t, err, "a newer slot version")
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// FuzzPrefixSlotCodec: what the fast decoder takes, encoding/json takes
// and reads the same; what encoding/json reads, AppendSlotJSON writes as
// encoding/json does.
func FuzzPrefixSlotCodec(f *testing.F) {
	good, _ := json.Marshal(samplePrefixState())
	f.Add(good)
	f.Add([]byte(`{"tracks":[null,{"first":1,"FIRST":2}],"turns":null,"breaks":{"a":null}}`))
	f.Add([]byte(`{"turns":[{"at":"2026-11-26T10:00:00Z","first":false,"elements":-0,"cause":"<x>"}],"breaks":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		kit.CheckSlotCodec(t, raw, decodePrefixFast, (*PrefixState).decodeStoredTurns, (*PrefixState).AppendSlotJSON)
	})
}

// A slot read from a store keeps its turns undecoded through a turn: the
// turn's record keeps the last maxPrefixTurns-1 of them as stored and adds
// its own, and PrefixOf (the sessions API) reads them all, as if they had
// been decoded, while the session keeps them undecoded.
func TestPrefixStoredTurns(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var before PrefixState
	for i := range maxPrefixTurns {
		before.Turns = append(before.Turns, PrefixTurn{At: at.Add(time.Duration(i) * time.Second),
			RequestID: fmt.Sprintf("req-%d", i), Hash: "h", Elements: i, BreakOffset: -1, BreakElement: -1})
	}
	data, err := before.AppendSlotJSON(nil)
	require.NoError(t, err)
	sess := &state.Session{ID: "s", Slots: state.Slots{PrefixSlotName: &state.RawSlot{V: PrefixSlotVersion, Data: data}}}

	st, err := prefixSlot(sess)
	require.NoError(t, err)
	require.Nil(t, st.Turns, "not decoded for the turn")
	require.NotEmpty(t, st.storedTurns)

	next := PrefixTurn{At: at.Add(time.Hour), RequestID: "req-next", Hash: "n", Elements: 11, BreakOffset: 40, BreakElement: 3, Cause: CauseClient}
	c := &prefixCheck{turn: next, track: prefixTrack{First: 7}}
	c.record(sess, &turnUsage{usage: conv.Usage{CacheReadTokens: 5}})
	next.CacheReadTokens = 5

	kept, err := prefixSlot(sess)
	require.NoError(t, err)
	require.Nil(t, kept.Turns, "still undecoded after the record")
	got, err := PrefixOf(sess)
	require.NoError(t, err)
	require.Equal(t, append(append([]PrefixTurn(nil), before.Turns[1:]...), next), got.Turns)
	require.Equal(t, map[string]int64{CauseClient: 1}, got.Breaks)
	require.Equal(t, uint32(7), got.Tracks[0].First)
	again, err := prefixSlot(sess)
	require.NoError(t, err)
	require.Nil(t, again.Turns, "PrefixOf leaves the session's slot as it was")

	// What the store writes back reads, with encoding/json, as the same.
	out, err := kept.AppendSlotJSON(nil)
	require.NoError(t, err)
	var slow PrefixState
	require.NoError(t, json.Unmarshal(out, &slow))
	require.Equal(t, got.Turns, slow.Turns)

	// A stored turn the engine cannot read (a foreign writer's) is
	// reported when read (the sessions API then leaves the section out)
	// until later turns push it out of the list.
	bad := &state.Session{ID: "b", Slots: state.Slots{PrefixSlotName: &state.RawSlot{V: PrefixSlotVersion,
		Data: []byte(`{"turns":[{"elements":"many"}]}`)}}}
	_, err = PrefixOf(bad)
	require.Error(t, err)
	for range maxPrefixTurns - 1 {
		c.record(bad, nil)
		_, err = PrefixOf(bad)
		require.Error(t, err)
	}
	c.record(bad, nil)
	got, err = PrefixOf(bad)
	require.NoError(t, err)
	require.Len(t, got.Turns, maxPrefixTurns)
}
