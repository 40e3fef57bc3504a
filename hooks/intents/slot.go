package intents

import (
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
	return &State{Intent: s.Intent, Audit: slices.Clone(s.Audit)}
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

// Of returns the intents slot of sess: nil when it has none, an error when
// the stored slot cannot be read (an unknown version, bad JSON). Decoding a
// stored slot caches the result in sess (state.SlotAs).
func Of(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}

// decodeSlot reads a stored slot: versions 0 and 1 have the same shape.
var decodeSlot = state.SameShapeJSON[State]("intents", 0, SlotVersion)
