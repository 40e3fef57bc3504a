package topics

// CountChapters is the Summary.Counts name of the number of chapters.
const CountChapters = "chapters"

// Counts implements state.Counter: the session's chapters, for session
// listings.
func (s *State) Counts() map[string]int64 {
	return map[string]int64{CountChapters: int64(len(s.Chapters) + s.storedCount())}
}
