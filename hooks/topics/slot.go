package topics

import (
	"slices"
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

// SlotVersion is the schema version of State's JSON encoding.
//
// Version history:
//   - 0: the session record's top-level "topic" and "chapters" fields,
//     before hooks owned their state (the store hands them over as a
//     version-0 slot in the same JSON shape).
//   - 1: the current form: {"topic": …, "chapters": […]}, the same shape.
const SlotVersion = 1

// State is topics' per-session slot: the active topic and the chapters.
type State struct {
	// Topic is the active topic ("" before the first chapter).
	Topic string `json:"topic,omitempty"`
	// Chapters are the session's chapters, oldest first.
	Chapters []Chapter `json:"chapters,omitempty"`
}

// Chapter is one topic chapter of a session.
type Chapter struct {
	Title     string     `json:"title"`
	StartedAt time.Time  `json:"started_at"`
	Calls     []CallNote `json:"calls,omitempty"`
}

// CallNote records a tool call made under a chapter.
type CallNote struct {
	Name string    `json:"name"`
	ID   string    `json:"id,omitempty"`
	At   time.Time `json:"at"`
}

// SlotVersion implements state.Slot.
func (s *State) SlotVersion() int { return SlotVersion }

// CloneSlot implements state.Slot.
func (s *State) CloneSlot() state.Slot {
	c := &State{Topic: s.Topic}
	if s.Chapters != nil {
		c.Chapters = make([]Chapter, len(s.Chapters))
		for i, ch := range s.Chapters {
			ch.Calls = slices.Clone(ch.Calls)
			c.Chapters[i] = ch
		}
	}
	return c
}

// Note implements state.Noter: the active topic, shown in session listings.
func (s *State) Note() string { return s.Topic }

// Active is the active topic ("" for a nil State).
func (s *State) Active() string {
	if s == nil {
		return ""
	}
	return s.Topic
}

// Of returns the topics slot of sess: nil when it has none, an error when
// the stored slot cannot be read (an unknown version, bad JSON). Decoding a
// stored slot caches the result in sess (state.SlotAs).
func Of(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}

// decodeSlot reads a stored slot: versions 0 and 1 have the same shape.
var decodeSlot = state.SameShapeJSON[State]("topics", 0, SlotVersion)
