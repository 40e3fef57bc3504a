package kit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// CheckSlotCodec holds a session slot's hand-written codec to
// encoding/json, the reference, on raw (a fuzz input):
//   - what fast decodes, encoding/json decodes to the same value once the
//     lists fast keeps as stored are decoded (decodeStored); what fast
//     takes and encoding/json refuses, decodeStored refuses;
//   - what encoding/json decodes, appendJSON writes so that encoding/json
//     reads it back as it reads its own encoding.
func CheckSlotCodec[T any](t *testing.T, raw []byte, fast func([]byte, *T) bool, decodeStored func(*T) error,
	appendJSON func(*T, []byte) ([]byte, error)) {
	t.Helper()
	var slow T
	serr := json.Unmarshal(raw, &slow)
	var got T
	if fast(raw, &got) {
		derr := decodeStored(&got)
		if serr == nil {
			require.NoError(t, derr, "%s", raw)
			require.Equal(t, slow, got, "%s", raw)
		} else {
			require.Error(t, derr, "the fast decoder took what encoding/json refuses: %s", raw)
		}
	}
	if serr != nil {
		return
	}
	want, werr := json.Marshal(&slow)
	out, oerr := appendJSON(&slow, nil)
	require.Equal(t, werr != nil, oerr != nil)
	if werr == nil {
		var a, b T
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(out, &b), "%s", out)
		require.Equal(t, a, b)
	}
}

// CheckSlotRoundTrip holds a slot's codec to encoding/json on s: appendJSON
// writes encoding/json's bytes for it, fast reads them back, writes the
// lists it keeps as stored back as they were, and, those lists decoded
// (decodeStored, on a copy), holds what encoding/json reads. It returns
// what fast read, its lists still stored.
func CheckSlotRoundTrip[T any](t *testing.T, s *T, fast func([]byte, *T) bool, decodeStored func(*T) error,
	appendJSON func(*T, []byte) ([]byte, error)) *T {
	t.Helper()
	want, err := json.Marshal(s)
	require.NoError(t, err)
	got, err := appendJSON(s, nil)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	var slow T
	require.NoError(t, json.Unmarshal(want, &slow))
	var read T
	require.True(t, fast(want, &read), "%s", want)
	again, err := appendJSON(&read, nil)
	require.NoError(t, err)
	require.Equal(t, string(want), string(again), "lists kept as stored are written back as they were")
	decoded := read
	require.NoError(t, decodeStored(&decoded))
	require.Equal(t, slow, decoded)
	return &read
}
