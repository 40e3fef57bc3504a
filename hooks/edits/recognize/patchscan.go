package recognize

import "strings"

// patchScanner finds the file headers of an apply_patch patch as its text
// arrives: it keeps only the current line, and only while the line may be
// a header ("*** …", possibly indented), so a fragment of content costs
// O(len) and no allocation.
type patchScanner struct {
	line []byte
	skip bool // the current line is not a header: skip to its end
}

// headerSink receives the headers found.
type headerSink interface{ patchHeader(op, path string) }

// maxHeaderLine bounds a header line; a longer line is not a header.
const maxHeaderLine = 4096

func (p *patchScanner) reset() { p.line, p.skip = p.line[:0], false }

// write scans the next piece of patch text.
func (p *patchScanner) write(s string, sink headerSink) {
	for len(s) > 0 {
		if p.skip {
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return
			}
			s = s[i+1:]
			p.skip = false
			continue
		}
		c := s[0]
		s = s[1:]
		if c == '\n' {
			p.flush(sink)
			continue
		}
		p.line = append(p.line, c)
		if !p.candidate() {
			p.line, p.skip = p.line[:0], true
		}
	}
}

// candidate reports whether the line so far may still be a header.
func (p *patchScanner) candidate() bool {
	if len(p.line) > maxHeaderLine {
		return false
	}
	i := 0
	for i < len(p.line) && (p.line[i] == ' ' || p.line[i] == '\t') {
		i++
	}
	t := p.line[i:]
	if len(t) > 4 {
		t = t[:4]
	}
	return string(t) == "*** "[:len(t)]
}

// flush ends the current line (at a newline, or at the end of the patch).
func (p *patchScanner) flush(sink headerSink) {
	if !p.skip && len(p.line) > 0 {
		if op, path, ok := parseHeader(string(p.line)); ok && op != "" {
			sink.patchHeader(op, path)
		}
	}
	p.reset()
}

// Patch header markers of the apply_patch format.
const (
	markBegin  = "*** Begin Patch"
	markEnd    = "*** End Patch"
	markAdd    = "*** Add File: "
	markUpdate = "*** Update File: "
	markDelete = "*** Delete File: "
	markMove   = "*** Move to: "
	markEOF    = "*** End of File"
)

// parseHeader parses a file header line of an apply_patch patch (leading
// and trailing white space ignored, as apply_patch does): the operation
// (OpCreate, OpModify, OpDelete; "" for a Move to line) and the path.
func parseHeader(line string) (op, path string, ok bool) {
	t := strings.TrimSpace(line)
	for _, h := range [...]struct{ mark, op string }{
		{markAdd, OpCreate}, {markUpdate, OpModify}, {markDelete, OpDelete}, {markMove, ""},
	} {
		if rest, found := strings.CutPrefix(t, h.mark); found {
			path = strings.TrimSpace(rest)
			return h.op, path, path != ""
		}
	}
	return "", "", false
}
