package topics

import (
	"encoding/json"
	"fmt"
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

// decodeSlot reads a stored slot of any supported version.
func decodeSlot(version int, data []byte) (*State, error) {
	switch version {
	case 0, 1: // version 0 has the same shape
		s := &State{}
		if len(data) > 0 {
			if err := json.Unmarshal(data, s); err != nil {
				return nil, fmt.Errorf("topics: slot version %d: %w", version, err)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("topics: slot version %d is newer than this build reads (%d)", version, SlotVersion)
}
