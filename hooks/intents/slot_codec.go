package intents

import (
	"fmt"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/shepherd-proxy/shepherd/state"
)

// The slot's audit trail grows with the session up to Options.MaxAudit
// entries (80 KB at the default 500), and a serialising store (Redis)
// reads and writes the whole slot on every request that runs the hook: a
// long session spent a millisecond and more per request in encoding/json
// on it (the bench's agent stream, whose every reply holds a tool call,
// after a few hundred turns). decodeSlot reads the slots this hook writes
// without reflection and leaves anything else to encoding/json
// (state.SameShapeFast), which stays the reference (FuzzSlotCodec holds
// the two to the same result); AppendSlotJSON writes what encoding/json
// writes for the state.

// decodeSlot reads a stored slot: versions 0 and 1 have the same shape.
var decodeSlot = state.SameShapeFast("intents", 0, SlotVersion, decodeStateFast)

// The JSON names of the slot's structs.
var (
	stateKeys = []string{"intent", "audit"}
	auditKeys = []string{"at", "tool", "call_id", "decision", "rule", "reason", "intent", "topic"}
)

// decodeStateFast decodes data into s as encoding/json would, or reports
// false (s then holds nothing the caller keeps).
func decodeStateFast(data []byte, s *State) bool {
	return jsonkit.DecodeDocument(data, stateKeys, func(key, v string) bool {
		switch key {
		case "intent":
			return jsonkit.DecodeString(v, &s.Intent)
		case "audit":
			if jsonkit.HasElements(v) {
				s.Audit, s.storedAudit = nil, strings.Clone(v) // decoded when read (Of)
				return true
			}
			return jsonkit.DecodeArray(v, &s.Audit, decodeAuditEntry)
		}
		return true
	})
}

func decodeAuditEntry(v string, e *AuditEntry) bool {
	_, ok := jsonkit.DecodeObject(v, auditKeys, func(key, v string) bool {
		switch key {
		case "at":
			return jsonkit.DecodeTime(v, &e.At)
		case "tool":
			return jsonkit.DecodeString(v, &e.Tool)
		case "call_id":
			return jsonkit.DecodeString(v, &e.CallID)
		case "decision":
			return jsonkit.DecodeString(v, &e.Decision)
		case "rule":
			return jsonkit.DecodeString(v, &e.Rule)
		case "reason":
			return jsonkit.DecodeString(v, &e.Reason)
		case "intent":
			return jsonkit.DecodeString(v, &e.Intent)
		case "topic":
			return jsonkit.DecodeString(v, &e.Topic)
		}
		return true
	})
	return ok
}

// decodeStoredAudit decodes storedAudit into Audit, as encoding/json would
// have decoded the slot's audit.
func (s *State) decodeStoredAudit() error {
	if err := jsonkit.TakeStored(&s.storedAudit, &s.Audit, decodeAuditEntry); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// appendStoredAudit appends entries to the stored audit, keeping its last
// limit entries undecoded; false when the audit is not stored (or an entry
// cannot be written: the caller then decodes it and appends the entries as
// values, as it does to any audit).
func (s *State) appendStoredAudit(entries []AuditEntry, limit int) bool {
	if s.storedAudit == "" || len(entries) == 0 {
		return s.storedAudit != ""
	}
	entries = entries[max(0, len(entries)-limit):]
	audit, err := jsonkit.AppendStoredArray(s.storedAudit, limit-len(entries), len(entries), func(dst []byte, i int) ([]byte, error) {
		return appendAuditEntry(dst, &entries[i])
	})
	if err != nil {
		if s.decodeStoredAudit() != nil {
			s.Audit, s.storedAudit = nil, "" // unreadable: the audit starts again
		}
		return false
	}
	s.storedAudit = audit
	return true
}

// storedRefusals counts the refused decisions in a stored audit. The
// stored entries are this codec's or encoding/json's (compact, the
// decision after the fixed members), where the member reads exactly
// "decision":"refused" and a string value cannot hold it unescaped.
func storedRefusals(audit string) int64 {
	if audit == "" {
		return 0
	}
	return int64(strings.Count(audit, `"decision":"`+DecisionRefused+`"`))
}

// AppendSlotJSON implements state.SlotAppender: the JSON encoding/json
// writes for s (strings escaped by jsonkit.AppendString).
func (s *State) AppendSlotJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	sep := false
	if s.Intent != "" {
		dst = jsonkit.AppendString(append(dst, `"intent":`...), s.Intent)
		sep = true
	}
	if s.storedAudit != "" {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(append(dst, `"audit":`...), s.storedAudit...)
	} else if len(s.Audit) > 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"audit":[`...)
		for i := range s.Audit {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendAuditEntry(dst, &s.Audit[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

func appendAuditEntry(dst []byte, e *AuditEntry) ([]byte, error) {
	dst, err := jsonkit.AppendTime(append(dst, `{"at":`...), e.At)
	if err != nil {
		return dst, err
	}
	dst = jsonkit.AppendString(append(dst, `,"tool":`...), e.Tool)
	if e.CallID != "" {
		dst = jsonkit.AppendString(append(dst, `,"call_id":`...), e.CallID)
	}
	dst = jsonkit.AppendString(append(dst, `,"decision":`...), e.Decision)
	for _, f := range [...]struct{ key, v string }{{`,"rule":`, e.Rule}, {`,"reason":`, e.Reason}, {`,"intent":`, e.Intent}, {`,"topic":`, e.Topic}} {
		if f.v != "" {
			dst = jsonkit.AppendString(append(dst, f.key...), f.v)
		}
	}
	return append(dst, '}'), nil
}
