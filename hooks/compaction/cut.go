package compaction

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// A cut result keeps headShare/shareOf of its kept characters from its
// start and the rest from its end; it may give up 1/snapDiv of the head
// (of the tail) to end the head (start the tail) at a line break instead
// of mid-line.
const (
	headShare = 3
	shareOf   = 5
	snapDiv   = 5
)

// cutHeadTail returns the start and the end of s that together hold at most
// keep characters (runes), about 60% from the start and 40% from the end:
// the head ends after a line break and the tail starts after one when a
// break lies within the last (first) fifth of each. It never splits a
// rune: head is a prefix of s and tail a suffix, both cut at rune
// boundaries (a byte that is not valid UTF-8 counts as one character). s no
// longer than keep comes back whole as head. keep <= 0 keeps nothing.
func cutHeadTail(s string, keep int) (head, tail string) {
	if keep <= 0 {
		return "", ""
	}
	n := utf8.RuneCountInString(s)
	if n <= keep {
		return s, ""
	}
	headRunes := keep * headShare / shareOf
	tailRunes := keep - headRunes
	h := byteOffset(s, headRunes) // head is s[:h]
	if i := strings.LastIndexByte(s[:h], '\n'); i >= 0 && utf8.RuneCountInString(s[i+1:h]) <= headRunes/snapDiv {
		h = i + 1
	}
	t := byteOffset(s, n-tailRunes) // tail is s[t:]
	if i := strings.IndexByte(s[t:], '\n'); i >= 0 && utf8.RuneCountInString(s[t:t+i+1]) <= tailRunes/snapDiv {
		t += i + 1
	}
	return s[:h], s[t:]
}

// byteOffset is the byte offset of s's rune number i (len(s) past the end).
func byteOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

// compacted is one result's compacted text and its counts.
type compacted struct {
	text                 string
	kept, total, omitted int
}

// compact cuts result to at most keep characters (head and tail) and puts
// the note, rendered with the counts and tool, between them; keep <= 0
// leaves the note alone (a stub).
func compact(result string, keep int, note, tool string) compacted {
	head, tail := cutHeadTail(result, keep)
	total := utf8.RuneCountInString(result)
	kept := utf8.RuneCountInString(head) + utf8.RuneCountInString(tail)
	c := compacted{kept: kept, total: total, omitted: total - kept}
	msg := renderNote(note, c, tool)
	switch {
	case kept == 0:
		c.text = msg
	default:
		var b strings.Builder
		b.Grow(len(head) + len(tail) + len(msg) + 4)
		b.WriteString(head)
		if !strings.HasSuffix(head, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(msg)
		b.WriteByte('\n')
		b.WriteString(tail)
		c.text = b.String()
	}
	return c
}

// renderNote fills the note's placeholders: {kept}, {total}, {omitted}
// (character counts with thousands separators) and {tool}.
func renderNote(note string, c compacted, tool string) string {
	if tool == "" {
		tool = "the tool"
	}
	return strings.NewReplacer(
		"{kept}", thousands(c.kept), "{total}", thousands(c.total),
		"{omitted}", thousands(c.omitted), "{tool}", tool,
	).Replace(note)
}

// thousands writes n with a comma every three digits (12,345).
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
