package topics

import (
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
	// Chapters are the session's chapters, oldest first: the newest
	// Limits.Chapters at most, each with the calls made under it, the
	// newest Limits.Calls calls at most in all (bound.go).
	Chapters []Chapter `json:"chapters,omitempty"`
	// ChaptersDropped and CallsDropped count the oldest chapters and call
	// notes dropped to keep the slot within its bounds.
	ChaptersDropped int64 `json:"chapters_dropped,omitempty"`
	CallsDropped    int64 `json:"calls_dropped,omitempty"`
	// storedChapters, when not empty, is the chapters as a serialising
	// store held them (a JSON array of at least one chapter), not decoded:
	// Chapters is then nil. The hook reads only the active topic, and a
	// turn's chapters and calls are added to the stored JSON
	// (slot_codec.go); Of decodes it.
	storedChapters string
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
	c := &State{}
	*c = *s
	if s.Chapters != nil {
		c.Chapters = make([]Chapter, len(s.Chapters))
		for i, ch := range s.Chapters {
			ch.Calls = slices.Clone(ch.Calls)
			c.Chapters[i] = ch
		}
	}
	return c
}

// record opens a chapter for each of titles (the last becomes the active
// topic) and notes calls under the newest chapter; calls before any
// chapter are kept under an untitled one. The oldest chapters and notes
// past lim are dropped (bound).
func (s *State) record(titles []string, calls []CallNote, now time.Time, lim Limits) {
	if len(titles) > 0 {
		s.Topic = titles[len(titles)-1]
	}
	if s.storedOver(len(titles), len(calls), lim) {
		s.decodeForValues() // trimmed below, as values
	} else if s.addStored(titles, calls, now) {
		return
	}
	defer s.bound(lim)
	for _, title := range titles {
		s.Chapters = append(s.Chapters, Chapter{Title: title, StartedAt: now})
	}
	if len(calls) == 0 {
		return
	}
	if len(s.Chapters) == 0 {
		s.Chapters = append(s.Chapters, Chapter{StartedAt: now})
	}
	last := &s.Chapters[len(s.Chapters)-1]
	last.Calls = append(last.Calls, calls...)
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

// Of returns the topics slot of sess with its chapters decoded: nil when
// it has none, an error when the stored slot cannot be read (an unknown
// version, bad JSON). The session keeps the slot as the hook reads it
// (stateOf).
func Of(sess *state.Session) (*State, error) {
	st, err := stateOf(sess)
	if st == nil || err != nil || st.storedChapters == "" {
		return st, err
	}
	out := *st
	if err := out.decodeStoredChapters(); err != nil {
		return nil, fmt.Errorf("topics: slot: %w", err)
	}
	return &out, nil
}

// stateOf is the session's slot as the hook reads it: decoded into sess
// (state.SlotAs), but for its stored chapters.
func stateOf(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}
