package gating

import (
	"github.com/shepherd-proxy/shepherd/state"
)

// SlotVersion is the schema version of State's JSON encoding.
//
// Version history:
//   - 1: {"start": "<anchor>"}.
const SlotVersion = 1

// State is gating's per-session slot: where the current topic started.
type State struct {
	// Start is the anchor (conv.Anchors) of the user message that started
	// the current topic; "" before the first decision.
	Start string `json:"start,omitempty"`
}

// SlotVersion implements state.Slot.
func (s *State) SlotVersion() int { return SlotVersion }

// CloneSlot implements state.Slot.
func (s *State) CloneSlot() state.Slot { c := *s; return &c }

// TopicStart is the anchor where the current topic started ("" for a nil
// State).
func (s *State) TopicStart() string {
	if s == nil {
		return ""
	}
	return s.Start
}

// Of returns the gating slot of sess: nil when it has none, an error when
// the stored slot cannot be read (an unknown version, bad JSON).
func Of(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}

var decodeSlot = state.SameShapeJSON[State]("gating", 1, SlotVersion)

// startTopic is the session change that records a topic's start.
func startTopic(anchor string) func(*state.Session) {
	return func(sess *state.Session) {
		s, err := state.SlotForUpdate(sess, Name, decodeSlot)
		if err != nil {
			return // an unreadable slot is kept as it is
		}
		s.Start = anchor
	}
}
