package journal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// hunk is one hunk of a unified diff as texts: Old is what the hunk
// replaces (its context and '-' lines), New what it puts instead (its
// context and '+' lines), each line with its "\n" unless a "\ No newline
// at end of file" marker followed it.
type hunk struct {
	Old, New string
}

// errMalformed is wrapped by parseHunks' errors.
var errMalformed = errors.New("journal: malformed diff")

// parseHunks reads the hunks of a unified diff of one file. Lines before
// the first "@@" (diff, index, ---/+++ headers) are skipped. A hunk header
// may carry line ranges ("@@ -3,4 +3,5 @@", which then bound its body) or
// none ("@@" alone, or "@@ text", as patches written by hand or by agents
// have); without ranges the body runs while lines start with ' ', '-', '+'
// or '\', and an empty line counts as an empty context line except at the
// end of a hunk. It never panics, whatever the input.
func parseHunks(diff string) ([]hunk, error) {
	lines := strings.SplitAfter(diff, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var out []hunk
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(lines[i], "@@") {
			i++
			continue
		}
		oldN, newN, counted := hunkRanges(lines[i])
		i++
		var body []string
		if counted {
			for oldN > 0 || newN > 0 || (i < len(lines) && strings.HasPrefix(lines[i], `\`)) {
				if i >= len(lines) {
					return nil, fmt.Errorf("%w: hunk %d ends early", errMalformed, len(out)+1)
				}
				ln := lines[i]
				switch {
				case ln == "\n" || ln == "" || ln[0] == ' ':
					oldN, newN = oldN-1, newN-1
				case ln[0] == '-':
					oldN--
				case ln[0] == '+':
					newN--
				case ln[0] == '\\':
				default:
					return nil, fmt.Errorf("%w: hunk %d: unexpected line %q", errMalformed, len(out)+1, clip(ln))
				}
				if oldN < 0 || newN < 0 {
					return nil, fmt.Errorf("%w: hunk %d is longer than its header says", errMalformed, len(out)+1)
				}
				body = append(body, ln)
				i++
			}
		} else {
			for i < len(lines) && isBodyLine(lines[i]) {
				body = append(body, lines[i])
				i++
			}
			for len(body) > 0 && body[len(body)-1] == "\n" {
				body = body[:len(body)-1]
			}
		}
		h, err := hunkTexts(body)
		if err != nil {
			return nil, fmt.Errorf("%w: hunk %d: %w", errMalformed, len(out)+1, err)
		}
		if h.Old == h.New {
			continue // a hunk of context only changes nothing
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no hunk that changes anything", errMalformed)
	}
	return out, nil
}

// isBodyLine reports whether ln can be a line of a hunk without ranges.
func isBodyLine(ln string) bool {
	if ln == "\n" {
		return true
	}
	if ln == "" || strings.HasPrefix(ln, "@@") {
		return false
	}
	switch ln[0] {
	case ' ', '-', '+', '\\':
		return true
	}
	return false
}

// hunkTexts builds a hunk's old and new texts from its body lines.
func hunkTexts(body []string) (hunk, error) {
	var old, neu strings.Builder
	// last says which texts the previous line went to, for a "\" marker.
	lastOld, lastNew := false, false
	for _, ln := range body {
		if ln == "\n" || ln == "" {
			ln = " " + ln
		}
		if ln[0] == '\\' {
			if !lastOld && !lastNew {
				return hunk{}, errors.New(`"\ No newline" marker follows no line`)
			}
			if lastOld {
				trimNewline(&old)
			}
			if lastNew {
				trimNewline(&neu)
			}
			lastOld, lastNew = false, false
			continue
		}
		text := ln[1:]
		if !strings.HasSuffix(text, "\n") {
			text += "\n" // the diff's last line lacked its newline; the file's does not
		}
		lastOld, lastNew = ln[0] != '+', ln[0] != '-'
		if lastOld {
			old.WriteString(text)
		}
		if lastNew {
			neu.WriteString(text)
		}
	}
	return hunk{Old: old.String(), New: neu.String()}, nil
}

// trimNewline drops the trailing "\n" of b's text.
func trimNewline(b *strings.Builder) {
	s := strings.TrimSuffix(b.String(), "\n")
	b.Reset()
	b.WriteString(s)
}

// hunkRanges reads the line counts of "@@ -a,b +c,d @@" (a count omitted
// is 1); counted is false when the header has no ranges.
func hunkRanges(header string) (oldN, newN int, counted bool) {
	body := strings.TrimPrefix(strings.TrimRight(header, "\r\n"), "@@")
	body = strings.TrimSpace(body)
	end := strings.Index(body, "@@")
	if end < 0 {
		return 0, 0, false
	}
	old, neu, ok := strings.Cut(strings.TrimSpace(body[:end]), " ")
	if !ok || !strings.HasPrefix(old, "-") || !strings.HasPrefix(neu, "+") {
		return 0, 0, false
	}
	oldN, ok1 := rangeCount(old[1:])
	newN, ok2 := rangeCount(neu[1:])
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return oldN, newN, true
}

// rangeCount reads the count of "start[,count]".
func rangeCount(r string) (int, bool) {
	start, count, has := strings.Cut(r, ",")
	if _, err := strconv.Atoi(start); err != nil {
		return 0, false
	}
	if !has {
		return 1, true
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 || n > 1<<24 {
		return 0, false
	}
	return n, true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
