package state

import (
	stdjson "encoding/json"
	"reflect"
	"testing"
)

// TestRecordSameAsEncodingJSON: the record codec (goccy/go-json, chosen for
// speed: BenchmarkRecord) writes exactly the bytes encoding/json writes for
// the same session, and reads them back to the same session, so records
// stay readable by any shepherd and by tools using the standard library.
func TestRecordSameAsEncodingJSON(t *testing.T) {
	s := benchSession()
	s.Routes = map[string]Route{"main": {Rule: "r<&>", RequestedModel: "a", Model: "b", Upstream: "u"}}
	s.Usage = Usage{Turns: 3, InputTokens: 10, CostUSD: 0.000123}
	s.Ledger = append(s.Ledger, LedgerEntry{Kind: "turn", Anchor: "\u2028<tag>&", Data: []byte{0, 1, 2, 0xff}})
	got, err := encodeRecord(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := stdjson.Marshal(struct {
		V int `json:"v"`
		*Session
	}{RecordVersion, s})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("record bytes differ:\n got %s\nwant %s", got, want)
	}
	var back, std Session
	if err := decodeRecord(got, &back); err != nil {
		t.Fatal(err)
	}
	if err := stdjson.Unmarshal(want, &struct {
		V int `json:"v"`
		*Session
	}{Session: &std}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, std) {
		t.Fatalf("decoded sessions differ:\n got %+v\nwant %+v", back, std)
	}
}
