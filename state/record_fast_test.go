package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDecodeRecordFastTakesWrittenRecords: the records encodeRecord
// writes (ledger, slots with notes and counts, routes, usage) go through
// the fast decoder, which reads them as encoding/json does.
func TestDecodeRecordFastTakesWrittenRecords(t *testing.T) {
	s := benchSession()
	s.Usage = Usage{Turns: 3, InputTokens: 10, OutputTokens: 20, CacheReadTokens: 5, CacheWriteTokens: 1, CostUSD: 0.0125}
	s.Routes = map[string]Route{"main": {Rule: "r", RequestedModel: "a", Model: "b", Upstream: "u"}, "sub": {}}
	s.Slots["noted"] = &RawSlot{V: 2, Data: []byte(`{"x":"é\n"}`), Noted: "topic \"one\"", Counted: map[string]int64{"chapters": 4}}
	s.Version = 9
	s.Agent = "codex <cli>"
	raw, err := encodeRecord(s)
	require.NoError(t, err)
	pre := Session{ID: "pre", Tenant: "t", CreatedAt: time.Unix(5, 0).UTC()}
	fast := pre
	require.True(t, decodeRecordFast(raw, &fast), "a record shepherd wrote left the fast path")
	slow := pre
	require.NoError(t, json.Unmarshal(raw, &record{Session: &slow}))
	require.Equal(t, slow, fast)
	require.Equal(t, "codex <cli>", fast.Agent)
	require.Len(t, fast.Ledger, len(s.Ledger))
}

// FuzzDecodeRecordFast: whatever the fast decoder takes, encoding/json
// takes too and reads the same session from (into the same starting
// session, as Update decodes).
func FuzzDecodeRecordFast(f *testing.F) {
	good, _ := encodeRecord(benchSession())
	f.Add(good)
	f.Add([]byte(`{"v":1,"id":"s","slots":{"a":{"v":1,"data":{"x":[1,2]},"counts":{}},"b":null},"ledger":[null,{"kind":"k","anchor":"a","data":"AAE="}],"routes":{"m":null}}`))
	f.Add([]byte(`{"v":1,"ID":"s","usage":{"Turns":1}}`))
	f.Add([]byte(`{"v":1,"id":null,"created_at":"2026-11-26T10:00:00.123+01:00","requests":-0,"usage":{"cost_usd":1e-7},"slots":{}}`))
	f.Add([]byte(`{"v":1,"ledger":[{"kind":"a"}],"ledger":[{"anchor":"b"}],"slots":{"a":{"data":null}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		pre := Session{ID: "pre", Tenant: "t", CreatedAt: time.Unix(5, 0).UTC()}
		fast := pre
		if !decodeRecordFast(raw, &fast) {
			return
		}
		slow := pre
		if err := json.Unmarshal(raw, &record{Session: &slow}); err != nil {
			t.Fatalf("the fast decoder took what encoding/json refuses (%v): %s", err, raw)
		}
		require.Equal(t, slow, fast, "%s", raw)
	})
}
