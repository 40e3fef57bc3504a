package recognize

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// patchEdits splits an apply_patch patch (Codex's format, as Cline CLI
// uses it too) into one Edit per file section:
//
//	*** Begin Patch
//	*** Add File: path        then "+" lines: the content (OpCreate)
//	*** Update File: path     optional "*** Move to: new", then @@ hunks (OpModify)
//	*** Delete File: path     (OpDelete)
//	*** End Patch
//
// Header lines may be indented. Text before the first header and after
// "*** End Patch" is ignored. It is an error when the patch has no file
// header or an added file has a line not starting with "+".
func patchEdits(patch string) ([]Edit, error) {
	var (
		out  []Edit
		cur  *Edit
		body strings.Builder
	)
	closeSection := func() error {
		if cur == nil {
			return nil
		}
		cur.Patch = body.String()
		cur.Size = int64(len(cur.Patch))
		if cur.Op == OpCreate {
			c, err := addedContent(cur.Patch)
			if err != nil {
				return fmt.Errorf("%s: %w", cur.Path, err)
			}
			cur.Content = &c
		}
		out = append(out, *cur)
		cur = nil
		body.Reset()
		return nil
	}
	rest := patch
	for rest != "" {
		var line string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			line, rest = rest, ""
		}
		t := strings.TrimSpace(line)
		if t == markEnd {
			break
		}
		if op, p, ok := parseHeader(t); ok && op != "" {
			if err := closeSection(); err != nil {
				return nil, err
			}
			cur = &Edit{Path: p, Op: op}
			body.WriteString(line)
			continue
		}
		if cur == nil {
			continue
		}
		if _, p, ok := parseHeader(t); ok && cur.Op == OpModify && cur.MoveTo == "" && body.Len() == len(firstLine(body.String())) {
			cur.MoveTo = p
		}
		body.WriteString(line)
	}
	if err := closeSection(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("patch has no file header (*** Add File:, *** Update File: or *** Delete File:)")
	}
	return out, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	return s
}

// sectionLines returns the lines of a file section after its header (and
// its Move to line), without their newlines.
func sectionLines(section string) []string {
	body := strings.TrimSuffix(section[len(firstLine(section)):], "\n")
	if body == "" {
		return nil
	}
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if len(lines) > 0 {
		if _, _, ok := parseHeader(lines[0]); ok && strings.HasPrefix(strings.TrimSpace(lines[0]), markMove) {
			lines = lines[1:]
		}
	}
	return lines
}

// addedContent is the content of an Add File section: its "+" lines, each
// with a newline.
func addedContent(section string) (string, error) {
	var b strings.Builder
	for i, l := range sectionLines(section) {
		rest, ok := strings.CutPrefix(l, "+")
		if !ok {
			if strings.TrimSpace(l) == "" && i == len(sectionLines(section))-1 {
				continue
			}
			return "", fmt.Errorf("added file line %d does not start with +", i+1)
		}
		b.WriteString(rest)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// hunk is one @@ chunk of an Update File section.
type hunk struct {
	context  string // the @@ line's text: a line to find first ("" for none)
	old, new []string
	eof      bool // *** End of File: the old lines end the file
	// lines keeps the chunk's lines as written (" ", "-", "+" prefixed).
	lines []string
}

// parseHunks reads the chunks of an Update File section.
func parseHunks(section string) ([]hunk, error) {
	var (
		out []hunk
		cur *hunk
	)
	for i, l := range sectionLines(section) {
		switch {
		case strings.HasPrefix(l, "@@"):
			out = append(out, hunk{context: strings.TrimSpace(strings.TrimPrefix(l, "@@"))})
			cur = &out[len(out)-1]
			continue
		case strings.TrimSpace(l) == markEOF:
			if cur == nil {
				return nil, fmt.Errorf("update line %d: *** End of File before any change", i+1)
			}
			cur.eof = true
			continue
		}
		if cur == nil { // the first chunk may omit its @@ line
			out = append(out, hunk{})
			cur = &out[len(out)-1]
		}
		switch {
		case l == "":
			cur.old, cur.new = append(cur.old, ""), append(cur.new, "")
			cur.lines = append(cur.lines, " ")
		case l[0] == ' ':
			cur.old, cur.new = append(cur.old, l[1:]), append(cur.new, l[1:])
			cur.lines = append(cur.lines, l)
		case l[0] == '-':
			cur.old = append(cur.old, l[1:])
			cur.lines = append(cur.lines, l)
		case l[0] == '+':
			cur.new = append(cur.new, l[1:])
			cur.lines = append(cur.lines, l)
		default:
			return nil, fmt.Errorf("update line %d: %q is not a context, removed or added line", i+1, l)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the update has no change")
	}
	return out, nil
}

// applyHunks applies an Update File section to before as apply_patch
// does: each chunk's @@ context line, then its old lines, are searched from
// where the previous chunk ended (exactly, then ignoring trailing white
// space, then ignoring surrounding white space); a chunk with no old lines
// appends at the end. The result ends with a newline.
func applyHunks(before, section string) (string, error) {
	hunks, err := parseHunks(section)
	if err != nil {
		return "", err
	}
	lines := strings.Split(before, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		at, n int
		new   []string
	}
	var repls []repl
	pos := 0
	for i, h := range hunks {
		if h.context != "" {
			at := seekLines(lines, []string{h.context}, pos, false)
			if at < 0 {
				return "", fmt.Errorf("change %d: context line %q not found", i+1, h.context)
			}
			pos = at + 1
		}
		if len(h.old) == 0 {
			repls = append(repls, repl{at: len(lines), new: h.new})
			continue
		}
		old, neu := h.old, h.new
		at := seekLines(lines, old, pos, h.eof)
		if at < 0 && len(old) > 0 && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			if len(neu) > 0 && neu[len(neu)-1] == "" {
				neu = neu[:len(neu)-1]
			}
			at = seekLines(lines, old, pos, h.eof)
		}
		if at < 0 {
			return "", fmt.Errorf("change %d: the lines to replace are not found:\n%s", i+1, strings.Join(h.old, "\n"))
		}
		repls = append(repls, repl{at: at, n: len(old), new: neu})
		pos = at + len(old)
	}
	sort.SliceStable(repls, func(i, j int) bool { return repls[i].at < repls[j].at })
	var out []string
	prev := 0
	for _, r := range repls {
		if r.at < prev { // overlapping chunks (pure additions at the end)
			r.at = prev
		}
		out = append(out, lines[prev:r.at]...)
		out = append(out, r.new...)
		prev = r.at + r.n
	}
	out = append(out, lines[prev:]...)
	return strings.Join(out, "\n") + "\n", nil
}

// seekLines finds pattern in lines at or after start (at the end first
// when eof), exactly, then ignoring trailing, then surrounding white
// space; -1 when it is not there.
func seekLines(lines, pattern []string, start int, eof bool) int {
	if len(pattern) > len(lines) {
		return -1
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t\r") },
		strings.TrimSpace,
	} {
		match := func(at int) bool {
			for k, p := range pattern {
				if norm(lines[at+k]) != norm(p) {
					return false
				}
			}
			return true
		}
		if eof {
			if at := len(lines) - len(pattern); at >= start && match(at) {
				return at
			}
		}
		for at := start; at+len(pattern) <= len(lines); at++ {
			if match(at) {
				return at
			}
		}
	}
	return -1
}

// patchDiff renders an Update File section as a unified diff: its chunks
// as hunks. The line numbers of a patch chunk are unknown; the hunks
// count from line 1 and a patch(1)-style applier finds them by context.
func patchDiff(e Edit) string {
	hunks, err := parseHunks(e.Patch)
	if err != nil {
		return ""
	}
	to := e.Path
	if e.MoveTo != "" {
		to = e.MoveTo
	}
	var b strings.Builder
	b.WriteString("--- a/" + strings.TrimPrefix(e.Path, "/") + "\n")
	b.WriteString("+++ b/" + strings.TrimPrefix(to, "/") + "\n")
	for _, h := range hunks {
		if len(h.lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@", hunkRange(1, len(h.old)), hunkRange(1, len(h.new)))
		if h.context != "" {
			b.WriteString(" " + h.context)
		}
		b.WriteByte('\n')
		for _, l := range h.lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// hunkRange formats a unified diff range.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
