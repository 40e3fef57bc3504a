package prose

import (
	"github.com/shepherd-proxy/shepherd/state"
)

// SlotVersion is the schema version of State's JSON encoding.
//
// Version history:
//   - 1: {"pending": bool, "nudged": bool} (the first version; version 0
//     never existed: the feature is newer than slots).
const SlotVersion = 1

// State is prose's per-session slot: the once-per-session nudge. Pending
// is set when prose was detected and nudge is once; the next tool-loop
// request of the session sends the reminder, clears Pending and sets
// Nudged, after which the session is never nudged again.
type State struct {
	Pending bool `json:"pending,omitempty"`
	Nudged  bool `json:"nudged,omitempty"`
}

// SlotVersion implements state.Slot.
func (s *State) SlotVersion() int { return SlotVersion }

// CloneSlot implements state.Slot.
func (s *State) CloneSlot() state.Slot { c := *s; return &c }

// Owes reports whether the session is owed its nudge: one was asked for
// and not sent yet (false for a nil State).
func (s *State) Owes() bool { return s != nil && s.Pending && !s.Nudged }

// MayAsk reports whether a detection may still ask for the nudge: none
// was asked for or sent yet (true for a nil State).
func (s *State) MayAsk() bool { return s == nil || !s.Pending && !s.Nudged }

// Of returns the prose slot of sess: nil when it has none, an error when
// the stored slot cannot be read (an unknown version, bad JSON). Decoding a
// stored slot caches the result in sess (state.SlotAs).
func Of(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}

// decodeSlot reads a stored slot: version 1 only.
var decodeSlot = state.SameShapeJSON[State](Name, 1, SlotVersion)

// askNudge is the session effect of a detection that asks for the nudge:
// pending, unless the session was nudged already. A slot this build cannot
// read is left as it is.
func askNudge(sess *state.Session) {
	s, err := state.SlotForUpdate(sess, Name, decodeSlot)
	if err != nil || s.Nudged {
		return
	}
	s.Pending = true
}

// nudgeSent is the session effect of the request that carried the nudge:
// no longer pending, never again.
func nudgeSent(sess *state.Session) {
	s, err := state.SlotForUpdate(sess, Name, decodeSlot)
	if err != nil {
		return
	}
	s.Pending, s.Nudged = false, true
}
