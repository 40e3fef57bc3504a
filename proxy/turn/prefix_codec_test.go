package turn

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		got, err := s.AppendSlotJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))

		var slow PrefixState
		require.NoError(t, json.Unmarshal(want, &slow))
		var fast PrefixState
		require.True(t, decodePrefixFast(want, &fast), "%s", want)
		require.Equal(t, slow, fast)
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
		var slow PrefixState
		serr := json.Unmarshal(raw, &slow)
		var fast PrefixState
		if decodePrefixFast(raw, &fast) {
			require.NoError(t, serr, "the fast decoder took what encoding/json refuses: %s", raw)
			require.Equal(t, slow, fast, "%s", raw)
		}
		if serr != nil {
			return
		}
		want, werr := json.Marshal(&slow)
		got, gerr := slow.AppendSlotJSON(nil)
		require.Equal(t, werr != nil, gerr != nil)
		if werr == nil {
			var a, b PrefixState
			require.NoError(t, json.Unmarshal(want, &a))
			require.NoError(t, json.Unmarshal(got, &b), "%s", got)
			require.Equal(t, a, b)
		}
	})
}
