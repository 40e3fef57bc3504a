package rewrite

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Seam de-duplication for truncation recovery: a continuation often repeats
// the last words of the text it continues, or starts with the whitespace the
// partial text already ended with.
const (
	// seamMinOverlap is the shortest repeated run removed: shorter runs are
	// as likely to be a coincidence ("the" ending one text and starting the
	// next) as a repetition.
	seamMinOverlap = 8
	// SeamWindow is how much of the continuation's beginning must be seen
	// before the seam can be decided (the longest overlap looked for).
	SeamWindow = 256
)

// TrimSeam returns next without the part that repeats the end of prev: the
// longest run of at least 8 and at most SeamWindow bytes that ends prev and
// starts next (cut on a rune boundary), or, when prev ends with whitespace,
// next's leading whitespace. It returns next unchanged when nothing repeats.
func TrimSeam(prev, next string) string {
	if prev == "" || next == "" {
		return next
	}
	if r, _ := utf8.DecodeLastRuneInString(prev); unicode.IsSpace(r) {
		return strings.TrimLeftFunc(next, unicode.IsSpace)
	}
	limit := min(len(prev), len(next), SeamWindow)
	for k := limit; k >= seamMinOverlap; k-- {
		if k < len(next) && !utf8.RuneStart(next[k]) {
			continue // would cut a rune of next in two
		}
		if strings.HasSuffix(prev, next[:k]) {
			return next[k:]
		}
	}
	return next
}

// SeamFilter applies TrimSeam to a continuation that arrives as a stream of
// text deltas: it holds the first SeamWindow bytes of the continuation, then
// emits the trimmed text and passes later deltas straight through. Its zero
// value is not usable; build it with NewSeamFilter.
type SeamFilter struct {
	prev    string // tail of the text being continued
	held    strings.Builder
	decided bool
}

// NewSeamFilter returns a filter for a continuation of prev (only its last
// SeamWindow bytes are kept).
func NewSeamFilter(prev string) *SeamFilter {
	if len(prev) > SeamWindow {
		prev = prev[len(prev)-SeamWindow:]
	}
	return &SeamFilter{prev: prev}
}

// Write takes the next delta and returns the text to emit now ("" while the
// seam is undecided).
func (f *SeamFilter) Write(delta string) string {
	if f.decided {
		return delta
	}
	f.held.WriteString(delta)
	if f.held.Len() < SeamWindow {
		return ""
	}
	return f.Flush()
}

// Flush decides the seam with what was held and returns the text to emit;
// call it when the continuation's text block ends (or the stream does).
// After Flush, Write passes deltas through.
func (f *SeamFilter) Flush() string {
	if f.decided {
		return ""
	}
	f.decided = true
	out := TrimSeam(f.prev, f.held.String())
	f.held.Reset()
	return out
}

// Decided reports whether the seam was decided (Write now passes through).
func (f *SeamFilter) Decided() bool { return f.decided }
