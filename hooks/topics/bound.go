package topics

import "strings"

// The slot grows with the session: every tool call is noted under its
// chapter, and a serialising store reads and writes the whole slot on
// every turn. Limits bound it. Past a bound the oldest are dropped down to
// three quarters of it (keepAfterTrim), so a session at its bound trims
// once every quarter bound of new calls, not on every turn (a trim decodes
// stored chapters).

// Limits bound the chapters and call notes a session's slot keeps.
type Limits struct {
	// Chapters is the most chapters kept (default DefaultMaxChapters).
	Chapters int
	// Calls is the most call notes kept, over all chapters (default
	// DefaultMaxCalls).
	Calls int
}

// The default bounds: at about 90 bytes a note, a session's slot stays
// under 100 KB.
const (
	DefaultMaxChapters = 200
	DefaultMaxCalls    = 1000
)

// withDefaults fills the zero bounds.
func (l Limits) withDefaults() Limits {
	if l.Chapters <= 0 {
		l.Chapters = DefaultMaxChapters
	}
	if l.Calls <= 0 {
		l.Calls = DefaultMaxCalls
	}
	return l
}

// keepAfterTrim is how many of a list bounded by limit a trim keeps.
func keepAfterTrim(limit int) int { return limit - limit/4 }

// bound drops the oldest chapters past lim.Chapters (with their calls)
// and then the oldest call notes past lim.Calls, each down to
// keepAfterTrim of its bound, and counts what it dropped. A chapter whose
// calls were all dropped stays: its title still orders the work.
func (s *State) bound(lim Limits) {
	if n := len(s.Chapters); n > lim.Chapters {
		drop := n - keepAfterTrim(lim.Chapters)
		for _, c := range s.Chapters[:drop] {
			s.CallsDropped += int64(len(c.Calls))
		}
		s.ChaptersDropped += int64(drop)
		s.Chapters = append([]Chapter(nil), s.Chapters[drop:]...)
	}
	total := 0
	for _, c := range s.Chapters {
		total += len(c.Calls)
	}
	if total <= lim.Calls {
		return
	}
	drop := total - keepAfterTrim(lim.Calls)
	s.CallsDropped += int64(drop)
	for i := range s.Chapters {
		c := &s.Chapters[i]
		k := min(drop, len(c.Calls))
		if k == len(c.Calls) {
			c.Calls = nil
		} else if k > 0 {
			c.Calls = append([]CallNote(nil), c.Calls[k:]...)
		}
		if drop -= k; drop == 0 {
			return
		}
	}
}

// storedOver reports whether adding chapters and calls to stored chapters
// would pass lim (the caller then decodes them and bounds the values).
// Calls are counted by their opening `{"name":`, which a compact call note
// (this codec's or encoding/json's) begins with and a JSON string cannot
// hold unescaped.
func (s *State) storedOver(chapters, calls int, lim Limits) bool {
	if s.storedChapters == "" {
		return false
	}
	if chapters > 0 && s.storedCount()+chapters > lim.Chapters {
		return true
	}
	return calls > 0 && strings.Count(s.storedChapters, `{"name":`)+calls > lim.Calls
}
