package state

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sameRecord checks that appendRecord and encoding/json write the same
// record for s: the same bytes when no string holds a character only
// encoding/json escapes (html), the same decoded session always; and that
// both refuse the same sessions.
func sameRecord(t *testing.T, s *Session, html bool) {
	t.Helper()
	want, werr := json.Marshal(record{V: RecordVersion, Session: s})
	got, gerr := appendRecord(nil, s, nil)
	if werr != nil || gerr != nil {
		require.Equal(t, werr != nil, gerr != nil, "encoding/json: %v, appendRecord: %v", werr, gerr)
		return
	}
	again, sum, err := encodeRecordSummary(s)
	require.NoError(t, err)
	require.Equal(t, string(got), string(again))
	require.Equal(t, summarize(s), sum, "the summary from the slots as encoded")
	if !html {
		require.Equal(t, string(want), string(got))
	}
	var a, b Session
	require.NoError(t, json.Unmarshal(want, &record{Session: &a}))
	require.NoError(t, json.Unmarshal(got, &record{Session: &b}), "%s", got)
	require.Equal(t, a, b)
}

// typedSlot is a hook's own slot type, encoded by encoding/json.
type typedSlot struct {
	Items []string `json:"items"`
	N     int      `json:"n"`
}

func (*typedSlot) SlotVersion() int           { return 3 }
func (t *typedSlot) CloneSlot() Slot          { c := *t; return &c }
func (t *typedSlot) Note() string             { return "note <" + t.Items[0] + ">" }
func (t *typedSlot) Counts() map[string]int64 { return map[string]int64{"b": 2, "a": int64(t.N)} }

// TestAppendRecordMatchesEncodingJSON: the record of sessions with every
// field set or empty, typed and raw slots, escapes, and values JSON
// cannot hold.
func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	full := benchSession()
	full.Usage = Usage{Turns: 3, InputTokens: 10, OutputTokens: 20, CostUSD: 1.5e-7}
	full.Routes = map[string]Route{"main": {Rule: "r", RequestedModel: "a", Model: "b", Upstream: "u"}, "sub": {}}
	full.Slots["typed"] = &typedSlot{Items: []string{"x", "y"}, N: 7}
	full.Slots["spaced"] = &RawSlot{V: 1, Data: []byte("{ \"a\" : [1, 2] }"), Counted: map[string]int64{}}
	full.Slots["nil"] = nil
	full.Ledger = append(full.Ledger, LedgerEntry{Kind: "k", Anchor: "a"}, LedgerEntry{Kind: "k", Anchor: "b", Root: "r\"1"}) // no data
	sameRecord(t, full, true)                                                                                                 // the typed slot's note holds <>

	plain := &Session{ID: "s", Tenant: "t", CreatedAt: time.Date(2026, 11, 26, 1, 2, 3, 4, time.FixedZone("x", 3600)),
		Agent: "a \"quoted\"\n", Usage: Usage{CostUSD: 1e21}, Version: 4}
	sameRecord(t, plain, false)
	sameRecord(t, &Session{}, false)
	sameRecord(t, &Session{Slots: Slots{}, Ledger: []LedgerEntry{}, Routes: map[string]Route{}}, false)

	for _, bad := range []*Session{
		{Usage: Usage{CostUSD: math.NaN()}},
		{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Slots: Slots{"x": &RawSlot{V: 1, Data: []byte("{not json")}}},
	} {
		sameRecord(t, bad, false)
	}
}

// FuzzAppendRecord: for any record encoding/json reads, the session it
// reads is written by appendRecord as encoding/json writes it.
func FuzzAppendRecord(f *testing.F) {
	good, _ := json.Marshal(record{V: RecordVersion, Session: benchSession()})
	f.Add(good)
	f.Add([]byte(`{"v":1,"id":"<s>","slots":{"a":{"v":1,"data":{"x":[1, 2]},"note":"n","counts":{"z":1,"a":2}}},"routes":{"m":{"rule":"r"}},"usage":{"cost_usd":0.000001}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s Session
		if json.Unmarshal(raw, &record{Session: &s}) != nil {
			return
		}
		sameRecord(t, &s, true)
	})
}
