package recognize

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseBlocks reads SEARCH/REPLACE blocks into replacements, each a run of
// whole lines (the text of each line with its newline). It reads Roo
// Code's apply_diff form
//
//	<<<<<<< SEARCH
//	:start_line:12
//	-------
//	old lines
//	=======
//	new lines
//	>>>>>>> REPLACE
//
// (the start line becomes the Change's Line hint) and Cline's
// replace_in_file form ("------- SEARCH", "=======", "+++++++ REPLACE",
// or the <<<<<<< / >>>>>>> markers). Text outside blocks is ignored; a
// block left open, or no block at all, is an error.
func parseBlocks(diff string) ([]Change, error) {
	const (
		outside = iota
		meta    // after the SEARCH marker: :start_line: lines and ------- may follow
		search
		replace
	)
	var (
		out           []Change
		state         = outside
		roo           bool
		old, neu      strings.Builder
		line, started int
	)
	lines := strings.Split(strings.ReplaceAll(diff, "\r\n", "\n"), "\n")
	for i, l := range lines {
		last := i == len(lines)-1
		switch state {
		case outside:
			if m, ok := blockMarker(l, "SEARCH", '<', '-'); ok {
				state, roo, line, started = meta, m == '<', 0, i+1
				old.Reset()
				neu.Reset()
			}
		case meta:
			if n, ok := strings.CutPrefix(strings.TrimSpace(l), ":start_line:"); ok {
				line, _ = strconv.Atoi(strings.TrimSpace(n))
				roo = true
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(l), ":end_line:") {
				continue
			}
			state = search
			if roo && isRun(strings.TrimSpace(l), '-') {
				continue // Roo's separator after the metadata
			}
			fallthrough
		case search:
			if isRun(strings.TrimSpace(l), '=') {
				state = replace
				continue
			}
			if !last {
				old.WriteString(l + "\n")
			}
		case replace:
			if _, ok := blockMarker(l, "REPLACE", '>', '+'); ok {
				out = append(out, Change{Old: old.String(), New: neu.String(), Line: line})
				state = outside
				continue
			}
			if !last {
				neu.WriteString(l + "\n")
			}
		}
	}
	if state != outside {
		return nil, fmt.Errorf("the SEARCH/REPLACE block that starts on line %d is not closed", started)
	}
	if len(out) == 0 {
		return nil, errors.New("no SEARCH/REPLACE block")
	}
	return out, nil
}

// blockMarker recognises "<<<<<<< SEARCH" or "------- SEARCH" (word
// SEARCH; a trailing ">" tolerated), returning the marker character.
func blockMarker(l, word string, a, b byte) (byte, bool) {
	t := strings.TrimSpace(l)
	t = strings.TrimSuffix(t, ">")
	run, w, ok := strings.Cut(t, " ")
	if !ok || w != word || len(run) < 3 || (run[0] != a && run[0] != b) || !isRun(run, run[0]) {
		return 0, false
	}
	return run[0], true
}

// isRun reports whether s is three or more c.
func isRun(s string, c byte) bool {
	if len(s) < 3 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			return false
		}
	}
	return true
}
