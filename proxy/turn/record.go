package turn

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Ledger entry kinds. Entries are written by the turn engine and replayed on
// every later request of the session, so the model sees each earlier turn
// exactly as it was.
const (
	// kindUserText: texts shepherd appended to a user turn (reminders).
	// Anchor: that user message. Data: userTextRecord.
	kindUserText = "user_text"
	// kindTurn: an assistant turn whose agent copy differs from what the
	// model produced (calls removed or reordered, follow-ups merged).
	// Anchor: the agent's copy of the assistant message. Data: turnRecord.
	kindTurn = "turn"
)

// recordVersion is the schema version of the ledger records the engine
// writes ("v" in their JSON). Version 0 is the form written before records
// carried a version: no "v", and a turn's results with Go field names.
const recordVersion = 1

// errRecordVersion marks a ledger record of a version this build cannot
// read (written by a newer shepherd): the entry is skipped and counted,
// never guessed at.
var errRecordVersion = errors.New("turn: unknown ledger record version")

// userTextRecord is the Data of a user_text entry.
type userTextRecord struct {
	V     int      `json:"v"`
	Texts []string `json:"texts"`
}

func newUserTextRecord(texts []string) userTextRecord {
	return userTextRecord{V: recordVersion, Texts: texts}
}

// turnRecord is the Data of a turn entry. It restores one assistant turn:
// the agent's copy of the message is replaced by Items (the model's real
// sequence: replies, shepherd's tool results, follow-up replies), and
// Results, shepherd's answers to calls the agent never saw in the last
// reply of Items, are put first among the tool results that follow. Tail is
// how many view messages Items form, so the last assistant message of the
// sequence is at pos+Tail-1.
type turnRecord struct {
	V int `json:"v"`
	// Items are JSON texts kept as strings, not json.RawMessage: encoding/json
	// compacts and HTML-escapes raw messages ("<" becomes \u003c), which
	// would change the bytes the model saw; a string round-trips exactly.
	Items   []string          `json:"items"`
	Tail    int               `json:"tail"`
	Results []conv.ToolResult `json:"results,omitempty"`
}

// turnRecordV0 is a turn entry as written before versioning: the results
// carried conv.ToolResult's Go field names.
type turnRecordV0 struct {
	Items   []string `json:"items"`
	Tail    int      `json:"tail"`
	Results []struct {
		CallID   string `json:"CallID"`
		Name     string `json:"Name"`
		Content  string `json:"Content"`
		IsError  bool   `json:"IsError"`
		Freeform bool   `json:"Freeform"`
	} `json:"results"`
}

// recordVersionOf reads a record's version: 0 when it has none.
func recordVersionOf(data []byte) (int, error) {
	v := gjson.GetBytes(data, "v")
	switch {
	case !v.Exists():
		return 0, nil
	case v.Type == gjson.Number && v.Num == float64(int(v.Num)):
		return int(v.Num), nil
	}
	return 0, fmt.Errorf("turn: malformed ledger record version %s", v.Raw)
}

// decodeTurnRecord reads a turn entry's Data of version 0 or 1.
func decodeTurnRecord(data []byte) (turnRecord, error) {
	v, err := recordVersionOf(data)
	if err != nil {
		return turnRecord{}, err
	}
	switch v {
	case 0:
		var old turnRecordV0
		if err := json.Unmarshal(data, &old); err != nil {
			return turnRecord{}, fmt.Errorf("turn: malformed turn record: %w", err)
		}
		r := turnRecord{V: recordVersion, Items: old.Items, Tail: old.Tail}
		for _, res := range old.Results {
			r.Results = append(r.Results, conv.ToolResult{
				CallID: res.CallID, Name: res.Name, Content: res.Content, IsError: res.IsError, Freeform: res.Freeform,
			})
		}
		return r, nil
	case recordVersion:
		var r turnRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return turnRecord{}, fmt.Errorf("turn: malformed turn record: %w", err)
		}
		return r, nil
	}
	return turnRecord{}, fmt.Errorf("%w: %d", errRecordVersion, v)
}

// decodeUserText reads a user_text entry's texts (versions 0 and 1 have
// the same texts). Entries are replayed on every request of a session, one
// per earlier turn, so this avoids encoding/json's reflection: the data is
// what encodeRecord wrote (valid JSON, valid UTF-8), which gjson decodes to
// the same strings.
func decodeUserText(data []byte) ([]string, error) {
	if !gjson.ValidBytes(data) {
		return nil, fmt.Errorf("turn: malformed user_text record")
	}
	res := gjson.GetManyBytes(data, "v", "texts")
	if v := res[0]; v.Exists() && (v.Type != gjson.Number || v.Num != float64(int(v.Num))) {
		return nil, fmt.Errorf("turn: malformed ledger record version %s", v.Raw)
	} else if v.Exists() && int(v.Num) != 0 && int(v.Num) != recordVersion {
		return nil, fmt.Errorf("%w: %d", errRecordVersion, int(v.Num))
	}
	texts := res[1]
	if !texts.IsArray() {
		return nil, fmt.Errorf("turn: malformed user_text record")
	}
	var out []string
	var err error
	texts.ForEach(func(_, v gjson.Result) bool {
		if v.Type != gjson.String {
			err = fmt.Errorf("turn: malformed user_text record")
			return false
		}
		out = append(out, v.Str)
		return true
	})
	return out, err
}

// encodeRecord encodes a ledger record.
func encodeRecord(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("turn: encoding ledger record: %v", err)) // only plain data types are encoded
	}
	return b
}
