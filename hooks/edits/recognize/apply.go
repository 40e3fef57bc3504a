package recognize

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/shepherd-proxy/shepherd/journal"
)

// ErrUnsupported is returned by Apply for an edit whose result it cannot
// compute (a notebook cell edit, an operation the call does not detail).
var ErrUnsupported = errors.New("the edit's result cannot be computed from the call")

// Apply returns the file's content after the edit, given its content
// before ("" for a file that did not exist). A deletion gives "". It is an
// error when a change does not apply: its old text is missing, occurs a
// number of times the change does not allow, or a patch chunk's lines are
// not found (chunks are found by their context, as apply_patch finds
// them); ErrUnsupported when the call does not say enough.
func (e Edit) Apply(before string) (string, error) {
	switch {
	case e.Op == OpDelete:
		return "", nil
	case e.Content != nil:
		return *e.Content, nil
	case e.Patch != "":
		return applyHunks(before, e.Patch)
	case len(e.Changes) > 0:
		cur, pos := before, 0
		for i, ch := range e.Changes {
			var err error
			if ch.Ordered {
				cur, pos, err = ch.applyOrdered(cur, pos)
			} else {
				cur, err = ch.apply(cur)
			}
			if err != nil {
				if len(e.Changes) > 1 {
					return "", fmt.Errorf("change %d: %w", i+1, err)
				}
				return "", err
			}
		}
		return cur, nil
	}
	return "", ErrUnsupported
}

// apply applies one change to s.
func (ch Change) apply(s string) (string, error) {
	if ch.Regex || ch.IgnoreCase || ch.From > 0 || ch.To > 0 {
		return ch.applyPattern(s)
	}
	if ch.Old == "" {
		return insertLines(s, ch.New, ch.Line), nil
	}
	n := strings.Count(s, ch.Old)
	switch {
	case n == 0 && ch.Line > 0:
		// A block with a start line (Roo's): whole lines compared
		// without their surrounding white space, nearest that line.
		at, size := nearestTrimmed(s, ch.Old, ch.Line)
		if at < 0 {
			return "", errors.New("the text to replace is not in the file")
		}
		return s[:at] + ch.New + s[at+size:], nil
	case n == 0:
		return "", errors.New("the text to replace is not in the file")
	case ch.Count > 0 && n != ch.Count:
		return "", fmt.Errorf("the text to replace occurs %d times, not %d", n, ch.Count)
	case ch.All || ch.Count > 0:
		return strings.ReplaceAll(s, ch.Old, ch.New), nil
	case n == 1:
		return strings.Replace(s, ch.Old, ch.New, 1), nil
	case ch.Line > 0:
		at := nearestOccurrence(s, ch.Old, ch.Line)
		return s[:at] + ch.New + s[at+len(ch.Old):], nil
	}
	return "", fmt.Errorf("the text to replace occurs %d times", n)
}

// applyOrdered applies an ordered change to s from offset pos and returns
// the result and the offset after the replacement. It looks for Old as
// Cline does: exactly from pos, then by trimmed lines from pos, then (for
// three lines or more) by its first and last lines from pos, then exactly
// anywhere.
func (ch Change) applyOrdered(s string, pos int) (string, int, error) {
	if ch.Old == "" {
		return ch.New, len(ch.New), nil
	}
	at, n := strings.Index(s[pos:], ch.Old), len(ch.Old)
	switch {
	case at >= 0:
		at += pos
	default:
		if at, n = trimmedLinesIndex(s, ch.Old, pos); at >= 0 {
			break
		}
		if at, n = anchorLinesIndex(s, ch.Old, pos); at >= 0 {
			break
		}
		if at, n = strings.Index(s, ch.Old), len(ch.Old); at < 0 {
			return "", 0, errors.New("the text to replace is not in the file")
		}
	}
	return s[:at] + ch.New + s[at+n:], at + len(ch.New), nil
}

// anchorLinesIndex finds a run of as many lines as old has, at or after
// pos, whose first and last lines equal old's (trimmed); old must have
// three lines or more. It returns the offset and length of the run
// (newline included), -1 when there is none.
func anchorLinesIndex(s, old string, pos int) (int, int) {
	want := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	if len(want) < 3 {
		return -1, 0
	}
	first, last := strings.TrimSpace(want[0]), strings.TrimSpace(want[len(want)-1])
	starts := lineStarts(s)
	for i, st := range starts {
		if st < pos || i+len(want) > len(starts) {
			continue
		}
		if strings.TrimSpace(lineAt(s, st)) != first || strings.TrimSpace(lineAt(s, starts[i+len(want)-1])) != last {
			continue
		}
		end := len(s)
		if i+len(want) < len(starts) {
			end = starts[i+len(want)]
		}
		return st, end - st
	}
	return -1, 0
}

// lineStarts returns the offsets at which s's lines start (a final empty
// line after a last newline is not one).
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && i+1 < len(s) {
			starts = append(starts, i+1)
		}
	}
	if s == "" {
		return nil
	}
	return starts
}

// lineAt returns the line starting at offset at, without its newline.
func lineAt(s string, at int) string {
	if i := strings.IndexByte(s[at:], '\n'); i >= 0 {
		return s[at : at+i]
	}
	return s[at:]
}

// trimmedLinesIndex finds old's lines in s at a line start at or after
// pos, each compared without its surrounding white space; it returns the
// offset and length of the match in s, -1 when there is none.
func trimmedLinesIndex(s, old string, pos int) (int, int) {
	want := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	start := pos
	if i := strings.LastIndexByte(s[:pos], '\n'); pos > 0 && i != pos-1 {
		// pos is inside a line: start at the next one.
		next := strings.IndexByte(s[pos:], '\n')
		if next < 0 {
			return -1, 0
		}
		start = pos + next + 1
	}
	for at := start; at <= len(s); {
		end, ok := at, true
		for _, w := range want {
			if end > len(s) {
				ok = false
				break
			}
			line := s[end:]
			nl := strings.IndexByte(line, '\n')
			if nl >= 0 {
				line = line[:nl]
			}
			if strings.TrimSpace(line) != strings.TrimSpace(w) {
				ok = false
				break
			}
			end += len(line)
			if nl >= 0 {
				end++
			} else {
				end++ // past the end: only the last wanted line may be there
			}
		}
		if ok {
			if end > len(s) {
				end = len(s)
			} else if !strings.HasSuffix(old, "\n") {
				end-- // the match ends before the last line's newline
			}
			return at, end - at
		}
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			break
		}
		at += nl + 1
	}
	return -1, 0
}

// nearestTrimmed finds old's lines in s compared without surrounding white
// space (trimmedLinesIndex), the match starting nearest to line; -1 when
// there is none.
func nearestTrimmed(s, old string, line int) (int, int) {
	best, bestSize, bestDist := -1, 0, 0
	for pos := 0; pos <= len(s); {
		at, size := trimmedLinesIndex(s, old, pos)
		if at < 0 {
			break
		}
		d := strings.Count(s[:at], "\n") + 1 - line
		if d < 0 {
			d = -d
		}
		if best < 0 || d < bestDist {
			best, bestSize, bestDist = at, size, d
		}
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			break
		}
		pos = at + nl + 1
	}
	return best, bestSize
}

// nearestOccurrence returns the offset of the occurrence of old in s
// whose line is nearest to line (the first of equally near ones).
func nearestOccurrence(s, old string, line int) int {
	best, bestDist := -1, 0
	ln, from := 1, 0
	for off := 0; ; {
		i := strings.Index(s[off:], old)
		if i < 0 {
			return best
		}
		at := off + i
		ln += strings.Count(s[from:at], "\n")
		from = at
		d := ln - line
		if d < 0 {
			d = -d
		}
		if best < 0 || d < bestDist {
			best, bestDist = at, d
		}
		off = at + 1
	}
}

// applyPattern applies a regular-expression, case-insensitive or
// line-limited replacement: every match in the lines From..To.
func (ch Change) applyPattern(s string) (string, error) {
	pat := ch.Old
	if !ch.Regex {
		pat = regexp.QuoteMeta(pat)
	}
	if ch.IgnoreCase {
		pat = "(?i)" + pat
	}
	if ch.Regex {
		pat = "(?m)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return "", fmt.Errorf("the pattern cannot be used: %w", err)
	}
	start, end := 0, len(s)
	if ch.From > 1 {
		start = lineOffset(s, ch.From)
	}
	if ch.To > 0 {
		end = lineOffset(s, ch.To+1)
	}
	if start > end {
		return "", fmt.Errorf("lines %d-%d are not in the file", ch.From, ch.To)
	}
	region := s[start:end]
	if !re.MatchString(region) {
		return "", errors.New("the text to replace is not in the file")
	}
	var out string
	if ch.Regex {
		out = re.ReplaceAllString(region, ch.New)
	} else {
		out = re.ReplaceAllLiteralString(region, ch.New)
	}
	return s[:start] + out + s[end:], nil
}

// lineOffset is the offset of line n (1-based) in s, len(s) past the end.
func lineOffset(s string, n int) int {
	off := 0
	for ln := 1; ln < n; ln++ {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		off += i + 1
	}
	return off
}

// insertLines inserts text as whole lines before line (1-based; 0, or a
// line past the end, appends).
func insertLines(s, text string, line int) string {
	if text == "" {
		return s
	}
	if s == "" {
		return text
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if line <= 0 || lineOffset(s, line) >= len(s) {
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return s + text
	}
	at := lineOffset(s, line)
	return s[:at] + text + s[at:]
}

// CallDiff returns a unified diff of the edit told by the call alone, for
// when the file's content is unknown ("" when the call says nothing a
// diff can show: a whole-file write, a deletion, a notebook edit). An
// added file's diff is from empty; a patch update's hunks are its chunks;
// replacements are one hunk each (old → new). Line numbers are those of
// an insert and otherwise start at 1: the hunks' text is what locates
// them.
func (e Edit) CallDiff() string {
	switch {
	case e.Op == OpCreate && e.Content != nil:
		return journal.Diff(e.Path, "", *e.Content)
	case e.Patch != "" && e.Op == OpModify:
		return patchDiff(e)
	case len(e.Changes) == 0:
		return ""
	}
	var b strings.Builder
	for _, ch := range e.Changes {
		if ch.Regex || ch.Old == ch.New || (ch.Ordered && ch.Old == "") {
			continue
		}
		if ch.Old == "" {
			n := strings.Count(strings.TrimSuffix(ch.New, "\n"), "\n") + 1
			line := ch.Line
			if line <= 0 {
				line = 1
			}
			fmt.Fprintf(&b, "@@ -%d,0 +%s @@\n", line-1, hunkRange(line, n))
			writeLines(&b, "+", ch.New)
			continue
		}
		d := udiff.Unified("a", "b", withNewline(ch.Old), withNewline(ch.New))
		// Keep the hunks, drop the file labels.
		if i := strings.Index(d, "\n@@"); i >= 0 {
			b.WriteString(d[i+1:])
		}
	}
	if b.Len() == 0 {
		return ""
	}
	p := strings.TrimPrefix(e.Path, "/")
	return "--- a/" + p + "\n+++ b/" + p + "\n" + b.String()
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// writeLines writes text's lines, each prefixed.
func writeLines(b *strings.Builder, prefix, text string) {
	for _, l := range strings.SplitAfter(withNewline(text), "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
}
