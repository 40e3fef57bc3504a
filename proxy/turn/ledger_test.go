package turn

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// v0TurnBlob is a turn entry as stores hold it from before records were
// versioned: no "v", the results with conv.ToolResult's Go field names.
const v0TurnBlob = `{"items":["{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_rm\",\"name\":\"rm\",\"input\":{}}]}"],"tail":1,"results":[{"CallID":"toolu_rm","Name":"rm","Content":"refused: out of scope","IsError":true,"Freeform":false}]}`

func TestDecodeTurnRecordV0(t *testing.T) {
	r, err := decodeTurnRecord([]byte(v0TurnBlob))
	require.NoError(t, err)
	require.Equal(t, recordVersion, r.V)
	require.Equal(t, 1, r.Tail)
	require.Len(t, r.Items, 1)
	require.Equal(t, []conv.ToolResult{{CallID: "toolu_rm", Name: "rm", Content: "refused: out of scope", IsError: true}}, r.Results)
}

func TestDecodeTurnRecordV1RoundTrip(t *testing.T) {
	in := turnRecord{V: recordVersion, Items: []string{`{"a":"<b>"}`}, Tail: 2, Results: []conv.ToolResult{{CallID: "c", Name: "n", Content: "x", Freeform: true}}}
	data := encodeRecord(in)
	require.Contains(t, string(data), `"v":1`)
	require.Contains(t, string(data), `"call_id":"c"`)
	out, err := decodeTurnRecord(data)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestDecodeRecordUnknownVersion(t *testing.T) {
	_, err := decodeTurnRecord([]byte(`{"v":2,"items":[],"tail":0}`))
	require.ErrorIs(t, err, errRecordVersion)
	_, err = decodeUserText([]byte(`{"v":7,"texts":["x"]}`))
	require.ErrorIs(t, err, errRecordVersion)
	_, err = decodeTurnRecord([]byte(`{"v":"one"}`))
	require.Error(t, err)
	require.NotErrorIs(t, err, errRecordVersion)
	// Version 0 user text is what stores hold today.
	texts, err := decodeUserText([]byte(`{"texts":["a"]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, texts)
}

// A v0 turn entry in a stored ledger replays as it always did; an entry of
// an unknown version is skipped and counted, and the rest still applies.
func TestReplayLedgerV0AndUnknown(t *testing.T) {
	codec := anthropic.Descriptor.Codec()
	tc := codec
	body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":"next"}]}`)
	view, err := codec.ParseRequest(body)
	require.NoError(t, err)
	anchors := conv.Anchors(view.Messages)
	ledger := []state.LedgerEntry{
		{Kind: kindTurn, Anchor: anchors[1], Data: []byte(v0TurnBlob)},
		{Kind: kindUserText, Anchor: anchors[2], Data: []byte(`{"v":9,"texts":["from the future"]}`)},
		{Kind: kindUserText, Anchor: anchors[0], Data: []byte(`{"texts":["reminder"]}`)},
	}
	out, _, st, err := replayLedger(tc, body, anchors, ledger, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 2, unreadable: 1}, st)
	require.Contains(t, string(out), "toolu_rm")
	require.Contains(t, string(out), "refused: out of scope")
	require.Contains(t, string(out), "reminder")
	require.NotContains(t, string(out), "from the future")
}

// anchorFinder scans for a few lookups and maps for many; both find the
// last position of an anchor, and -1 for one not there.
func TestAnchorFinderScanAndMapAgree(t *testing.T) {
	anchors := []string{"a", "b", "c", "b", "d", "a", "e"}
	for _, q := range []string{"a", "b", "c", "d", "e", "x", ""} {
		scan := anchorFinder(anchors, anchorScanMax)(q)
		mapped := anchorFinder(anchors, anchorScanMax+1)(q)
		want := -1
		for i, a := range anchors {
			if a == q {
				want = i
			}
		}
		require.Equal(t, want, scan, "scan %q", q)
		require.Equal(t, want, mapped, "map %q", q)
	}
}

// The memo gives what decoding gives, for records seen before or not, and
// errors are not remembered.
func TestUserTextMemoIsDecode(t *testing.T) {
	var m userTextMemo
	records := [][]byte{
		encodeRecord(newUserTextRecord([]string{"a", "b\n\"c\""})),
		encodeRecord(newUserTextRecord([]string{"é"})),
		[]byte(`{"texts":["old"]}`),
	}
	for range 3 {
		for _, r := range records {
			want, werr := decodeUserText(r)
			got, err := m.decode(r)
			require.NoError(t, werr)
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
		for _, bad := range []string{`{"v":7,"texts":["x"]}`, `{"texts":[1]}`, `{`} {
			_, err := m.decode([]byte(bad))
			require.Error(t, err, bad)
		}
	}
	require.Len(t, m.texts, len(records))
	// Full: it starts over and still decodes.
	for i := range maxUserTextMemo + 10 {
		got, err := m.decode(encodeRecord(newUserTextRecord([]string{fmt.Sprint(i)})))
		require.NoError(t, err)
		require.Equal(t, []string{fmt.Sprint(i)}, got)
	}
	require.LessOrEqual(t, len(m.texts), maxUserTextMemo)
}
