package state

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// RecordVersion is the schema version of the session record a serialising
// store (Redis) writes: {"v":1, …the Session's fields…, "slots":{…}}.
//
// Version history:
//   - 0 (no "v" key): written before hooks owned their state. Topic,
//     chapters, intent, audit and recovery counters were top-level fields;
//     decodeRecord moves them into version-0 slots named after their hooks
//     ("topics": {"topic","chapters"}, "intents": {"intent","audit"},
//     "recovery": the counters object), in those exact JSON shapes, for the
//     hooks to decode.
//   - 1: the current form.
const RecordVersion = 1

// ErrRecordVersion is returned (wrapped) for a stored record written by a
// newer shepherd than this one. Get reports it; Update refuses to overwrite
// such a record, so a rolling upgrade never loses what the newer version
// wrote.
var ErrRecordVersion = errors.New("state: session record has an unsupported schema version")

// record is the serialised form of a Session. Encoding and decoding it is
// most of what the Redis store adds to a turn's CPU: encoding is
// appendRecord (record_encode.go), decoding decodeRecordFast
// (record_fast.go) for the records shepherd writes and encoding/json for
// anything else; encoding/json on this type stays the reference the tests
// hold both to.
type record struct {
	V int `json:"v"`
	*Session
}

// encodeRecord serialises s at RecordVersion.
func encodeRecord(s *Session) ([]byte, error) {
	return appendRecord(make([]byte, 0, recordSizeHint(s)), s, nil)
}

// encodeRecordSummary is encodeRecord, and summarize(s) from what it
// encoded (each slot's note and counts read once).
func encodeRecordSummary(s *Session) ([]byte, Summary, error) {
	var seen slotFacts
	data, err := appendRecord(make([]byte, 0, recordSizeHint(s)), s, &seen)
	if err != nil {
		return nil, Summary{}, err
	}
	sum := summaryOf(s)
	sum.Counts, sum.Notes = seen.counts, seen.notes
	return data, sum, nil
}

// decodeRecord reads a serialised record of any supported version into s.
func decodeRecord(raw []byte, s *Session) error {
	v := gjson.GetBytes(raw, "v")
	switch {
	case !v.Exists():
		return decodeLegacyRecord(raw, s)
	case v.Type != gjson.Number || float64(v.Int()) != v.Num || v.Int() < 1 || v.Int() > RecordVersion:
		return fmt.Errorf("%w: %s (this build reads up to %d)", ErrRecordVersion, v.Raw, RecordVersion)
	}
	if decodeRecordFast(raw, s) {
		return nil
	}
	return json.Unmarshal(raw, &record{Session: s})
}

// legacyRecord is a version-0 record: the fields that moved into slots are
// caught here (fields at depth 0 win over the embedded Session's).
type legacyRecord struct {
	*Session
	Topic    json.RawMessage `json:"topic"`
	Chapters json.RawMessage `json:"chapters"`
	Intent   json.RawMessage `json:"intent"`
	Audit    json.RawMessage `json:"audit"`
	Recovery json.RawMessage `json:"recovery"`
}

// legacySlots names the version-0 slot each legacy field goes to.
var legacySlots = []struct {
	slot   string
	fields []string
	// whole: the slot is the field's value itself, not an object of fields.
	whole bool
	// note: the field that was the slot's listing note (see Noter).
	note string
}{
	{slot: "topics", fields: []string{"topic", "chapters"}, note: "topic"},
	{slot: "intents", fields: []string{"intent", "audit"}, note: "intent"},
	{slot: "recovery", fields: []string{"recovery"}, whole: true},
}

func decodeLegacyRecord(raw []byte, s *Session) error {
	l := legacyRecord{Session: s}
	if err := json.Unmarshal(raw, &l); err != nil {
		return err
	}
	values := map[string]json.RawMessage{
		"topic": l.Topic, "chapters": l.Chapters, "intent": l.Intent, "audit": l.Audit, "recovery": l.Recovery,
	}
	for _, ls := range legacySlots {
		obj := map[string]json.RawMessage{}
		for _, f := range ls.fields {
			if v := values[f]; len(v) > 0 && string(v) != "null" {
				obj[f] = v
			}
		}
		if len(obj) == 0 {
			continue
		}
		data := values[ls.fields[0]]
		if !ls.whole {
			var err error
			if data, err = json.Marshal(obj); err != nil {
				return err
			}
		}
		raw := &RawSlot{V: 0, Data: data}
		if ls.note != "" {
			// The active topic and intent were plain strings.
			_ = json.Unmarshal(values[ls.note], &raw.Noted)
		}
		s.SetSlot(ls.slot, raw)
	}
	return nil
}

// UnmarshalJSON reads a summary of any version: one stored before slots
// (no "notes") carried the active topic and intent at the top level, which
// become the notes of the slots they moved to (see legacySlots).
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	var v struct {
		plain
		Topic  string `json:"topic"`
		Intent string `json:"intent"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Summary(v.plain)
	for slot, note := range map[string]string{"topics": v.Topic, "intents": v.Intent} {
		if note == "" {
			continue
		}
		if s.Notes == nil {
			s.Notes = map[string]string{}
		}
		if _, ok := s.Notes[slot]; !ok {
			s.Notes[slot] = note
		}
	}
	return nil
}
