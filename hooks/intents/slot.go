package intents

import (
	"fmt"
	"slices"
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

// SlotVersion is the schema version of State's JSON encoding.
//
// Version history:
//   - 0: the session record's top-level "intent" and "audit" fields, before
//     hooks owned their state (the store hands them over as a version-0
//     slot in the same JSON shape).
//   - 1: the current form: {"intent": …, "audit": […]}, the same shape.
const SlotVersion = 1

// State is intents' per-session slot: the selected intent and the audit
// trail of governance decisions.
type State struct {
	// Intent is the intent the session selected ("" for none yet).
	Intent string `json:"intent,omitempty"`
	// Audit lists the decisions, oldest first, at most Options.MaxAudit.
	Audit []AuditEntry `json:"audit,omitempty"`
	// storedAudit, when not empty, is the audit as a serialising store
	// held it (a JSON array of at least one entry), not decoded: Audit is
	// then nil. The hook reads only the intent, and a turn's decisions are
	// appended to the stored entries as they are, so a request served
	// from Redis decodes no audit entry (slot_codec.go). Of, which the
	// sessions API and the console read, decodes them.
	storedAudit string
}

// AuditEntry is one recorded governance decision on a tool call.
type AuditEntry struct {
	At       time.Time `json:"at"`
	Tool     string    `json:"tool"`
	CallID   string    `json:"call_id,omitempty"`
	Decision string    `json:"decision"`
	// Rule is the check that decided (a stable code for metrics, e.g.
	// gatekeeper, scope); Reason is the text the model was given, if any.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	Intent string `json:"intent,omitempty"`
	Topic  string `json:"topic,omitempty"`
}

// SlotVersion implements state.Slot.
func (s *State) SlotVersion() int { return SlotVersion }

// CloneSlot implements state.Slot.
func (s *State) CloneSlot() state.Slot {
	return &State{Intent: s.Intent, Audit: slices.Clone(s.Audit), storedAudit: s.storedAudit}
}

// Note implements state.Noter: the selected intent, shown in session
// listings.
func (s *State) Note() string { return s.Intent }

// Active is the selected intent ("" for a nil State).
func (s *State) Active() string {
	if s == nil {
		return ""
	}
	return s.Intent
}

// Of returns the intents slot of sess with its audit decoded: nil when it
// has none, an error when the stored slot cannot be read (an unknown
// version, bad JSON). The session keeps the slot as the hook reads it
// (stateOf).
func Of(sess *state.Session) (*State, error) {
	st, err := stateOf(sess)
	if st == nil || err != nil || st.storedAudit == "" {
		return st, err
	}
	out := *st
	if err := out.decodeStoredAudit(); err != nil {
		return nil, fmt.Errorf("intents: slot: %w", err)
	}
	return &out, nil
}

// stateOf is the session's slot as the hook reads it: decoded into sess
// (state.SlotAs), but for its stored audit.
func stateOf(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}
