package state

import "testing"

// FuzzDecodeRecord: any bytes decode to a session or an error, never a
// panic; a session that encodes again decodes again.
func FuzzDecodeRecord(f *testing.F) {
	good, _ := encodeRecord(benchSession())
	f.Add(good)
	f.Add([]byte(`{"v":1,"id":"s","slots":{"a":{"v":1,"data":{"x":[1,2]}}},"ledger":[{"kind":"k","anchor":"a","data":"AAE="}]}`))
	f.Add([]byte(`{"id":"legacy","topic":{"t":1},"chapters":[]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s Session
		if decodeRecord(raw, &s) != nil {
			return
		}
		again, err := encodeRecord(&s)
		if err != nil {
			return // e.g. a slot whose raw data is not JSON
		}
		var back Session
		if err := decodeRecord(again, &back); err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
		}
	})
}
