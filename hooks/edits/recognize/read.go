package recognize

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Read returns the file a read tool's result holds, when it holds the
// whole file: the call asked for no line range (or, for a numbered
// result, a limit the file did not reach) and the result says nothing of
// truncation. path is the call's path argument as written; content is the
// file's text with the agent's decorations removed: line-number prefixes
// (Claude Code's "N\t", "N→" or "N:" — carriage returns at line ends are
// lost, as Claude Code drops them), the <system-reminder> notes it puts
// before and after the lines, Roo Code's <file><content> envelope and
// "N | " prefixes. ok is false for any other tool, a partial read, or a
// result in another shape (an error, an image, "file unchanged"). The
// caller passes only results that were not errors.
func (t *Table) Read(tool string, args []byte, result string) (path, content string, ok bool) {
	r := t.rule(tool)
	if r == nil || r.Kind != KindRead || !gjson.ValidBytes(args) {
		return "", "", false
	}
	a := argReader{root: gjson.ParseBytes(args)}
	path = a.str(r.PathArg, true)
	if a.err != nil || path == "" {
		return "", "", false
	}
	offset, limit := a.int(r.OffsetArg, false), a.int(r.LimitArg, false)
	if a.err != nil {
		return "", "", false
	}
	switch r.Format {
	case FormatNumbered:
		if offset > 1 {
			return "", "", false
		}
		content, ok = readNumbered(result, limit)
	default:
		if offset > 0 || limit > 0 {
			return "", "", false
		}
		content, ok = readPlain(result)
	}
	if !ok {
		return "", "", false
	}
	return path, content, true
}

// claudeDefaultLines is the number of lines Claude Code's Read returns
// when the call gives no limit.
const claudeDefaultLines = 2000

const (
	reminderOpen  = "<system-reminder>"
	reminderClose = "</system-reminder>"
	emptyWarning  = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
)

// readNumbered reads a Claude Code Read result: numbered lines from 1,
// consecutive, with only <system-reminder> notes before and after.
func readNumbered(result string, limit int) (string, bool) {
	s := stripReminders(result, true)
	if strings.TrimSpace(s) == "" {
		if strings.Contains(result, emptyWarning) {
			return "", true
		}
		return "", false
	}
	var (
		b    strings.Builder
		n    = 0
		rest = s
	)
	for rest != "" {
		line := rest
		next := ""
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, next = rest[:i], rest[i+1:]
		}
		text, ok := numberedLine(line, n+1)
		if !ok {
			break
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(text)
		n++
		rest = next
	}
	if n == 0 || strings.TrimSpace(stripReminders(rest, false)) != "" {
		return "", false // a note that is not a reminder: truncation, a notice
	}
	if limit > 0 && n >= limit {
		return "", false // the limit may have cut the file
	}
	if limit == 0 && n == claudeDefaultLines {
		return "", false // Claude Code's default cut, should its note be missing
	}
	return b.String(), true
}

// numberedLine parses "  N\ttext", "N→text" or "N:text" with number want.
func numberedLine(line string, want int) (string, bool) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	if j == i || j-i > 10 {
		return "", false
	}
	if n, err := strconv.Atoi(line[i:j]); err != nil || n != want {
		return "", false
	}
	rest := line[j:]
	for _, sep := range [...]string{"\t", "→", ":"} {
		if t, ok := strings.CutPrefix(rest, sep); ok {
			return t, true
		}
	}
	return "", false
}

// stripReminders removes <system-reminder> blocks (and the blank lines
// around them) from the start of s (leading) or from its end.
func stripReminders(s string, leading bool) string {
	if leading {
		for {
			t := strings.TrimLeft(s, "\n")
			if !strings.HasPrefix(t, reminderOpen) {
				return s
			}
			end := strings.Index(t, reminderClose)
			if end < 0 {
				return s
			}
			s = strings.TrimPrefix(t[end+len(reminderClose):], "\n")
		}
	}
	for {
		t := strings.TrimRight(s, "\n ")
		if !strings.HasSuffix(t, reminderClose) {
			return s
		}
		start := strings.LastIndex(t, reminderOpen)
		if start < 0 {
			return s
		}
		s = t[:start]
	}
}

// readPlain reads a result that is the file's text: as is, or Roo Code's
// <file><content lines="…"> envelope with "N | " lines. gemini-cli's
// truncation notice, Roo's <notice>s and error texts make it partial.
func readPlain(result string) (string, bool) {
	t := strings.TrimSpace(result)
	if strings.HasPrefix(t, "<files>") || strings.HasPrefix(t, "<file><path>") {
		return readRoo(t)
	}
	if c, ok, roo := readRooNative(result); roo {
		return c, ok
	}
	if strings.HasPrefix(t, "IMPORTANT: The file content has been truncated") ||
		strings.Contains(result, "--- FILE CONTENT (truncated) ---") {
		return "", false
	}
	return result, true
}

// readRoo reads Roo Code's read_file result for one file.
func readRoo(t string) (string, bool) {
	if strings.Count(t, "<file>") != 1 || strings.Contains(t, "<error>") {
		return "", false
	}
	if strings.Contains(t, "<notice>") {
		if strings.Contains(t, "<notice>File is empty</notice>") && !strings.Contains(t, "<content lines=") {
			return "", true
		}
		return "", false
	}
	start := strings.Index(t, "<content lines=\"")
	if start < 0 {
		return "", false
	}
	body := t[start:]
	nl := strings.IndexByte(body, '\n')
	end := strings.LastIndex(body, "</content>")
	if nl < 0 || end < nl {
		return "", false
	}
	return rooLines(strings.Split(strings.TrimSuffix(body[nl+1:end], "\n"), "\n"))
}

// readRooNative reads Roo Code's native-protocol read_file result:
//
//	File: path
//	Lines 1-N:
//	 1 | text
//
// roo is false when the result does not have that shape (it is then
// plain text); a Note line (truncation, an empty file) makes it partial,
// except Roo's note for an empty file.
func readRooNative(result string) (content string, ok, roo bool) {
	head, rest, found := strings.Cut(result, "\n")
	if !found || !strings.HasPrefix(head, "File: ") {
		return "", false, false
	}
	second, body, _ := strings.Cut(rest, "\n")
	if strings.HasPrefix(second, "Note: ") {
		return "", strings.TrimSpace(rest) == "Note: File is empty", true
	}
	if !strings.HasPrefix(second, "Lines 1-") || !strings.HasSuffix(second, ":") {
		return "", false, false
	}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "Note: ") {
			return "", false, true
		}
	}
	content, ok = rooLines(lines)
	return content, ok, true
}

// rooLines strips Roo's "N | " prefixes from lines numbered from 1; each
// line gets its newline back.
func rooLines(lines []string) (string, bool) {
	var b strings.Builder
	for i, l := range lines {
		num, text, ok := strings.Cut(l, " | ")
		if !ok {
			return "", false
		}
		if n, err := strconv.Atoi(strings.TrimSpace(num)); err != nil || n != i+1 {
			return "", false
		}
		b.WriteString(text)
		b.WriteByte('\n')
	}
	return b.String(), true
}

// ReadPath returns the path a read tool's call reads (whatever range it
// asks for), or false for any other tool or arguments without a path. A
// read that did not fail proves the file exists, even when Read cannot
// tell its whole content.
func (t *Table) ReadPath(tool string, args []byte) (string, bool) {
	r := t.rule(tool)
	if r == nil || r.Kind != KindRead || !gjson.ValidBytes(args) {
		return "", false
	}
	a := argReader{root: gjson.ParseBytes(args)}
	path := a.str(r.PathArg, true)
	return path, a.err == nil && path != ""
}
