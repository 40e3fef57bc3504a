package recovery

import (
	"github.com/shepherd-proxy/shepherd/state"
)

// SlotVersion is the schema version of State's JSON encoding.
//
// Version history:
//   - 0: the session record's top-level "recovery" object, before hooks
//     owned their state (the store hands it over as a version-0 slot, the
//     object itself).
//   - 1: the current form, the same object.
const SlotVersion = 1

// State is recovery's per-session slot: it counts truncation recovery over
// the session: turns with a reply cut by the output limit that recovery
// tried to continue, the continuations sent, and the turns that ended
// complete.
type State struct {
	Truncated int64 `json:"truncated"`
	Attempts  int64 `json:"attempts"`
	Recovered int64 `json:"recovered"`
}

// SlotVersion implements state.Slot.
func (s *State) SlotVersion() int { return SlotVersion }

// CloneSlot implements state.Slot.
func (s *State) CloneSlot() state.Slot { c := *s; return &c }

// Of returns the recovery slot of sess: nil when it has none, an error when
// the stored slot cannot be read (an unknown version, bad JSON). Decoding a
// stored slot caches the result in sess (state.SlotAs).
func Of(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}

// decodeSlot reads a stored slot: versions 0 and 1 have the same shape.
var decodeSlot = state.SameShapeJSON[State]("recovery", 0, SlotVersion)

// CountTurn returns the session effect that records one turn recovery
// continued: attempts continuations, and whether the agent got a complete
// reply. The turn engine applies it with the turn's other effects. A slot
// this build cannot read is left as it is.
func CountTurn(attempts int64, recovered bool) func(*state.Session) {
	return func(sess *state.Session) {
		s, err := state.SlotForUpdate(sess, Name, decodeSlot)
		if err != nil {
			return // a slot this build cannot read is left as it is
		}
		s.Truncated++
		s.Attempts += attempts
		if recovered {
			s.Recovered++
		}
	}
}
