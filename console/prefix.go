package console

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/state"
)

// prefixRow is one turn of the session page's cache-integrity pane
// (docs/diagnostics.md).
type prefixRow struct {
	turn.PrefixTurn
	Status string // prefixStatus's words
	Broken bool
}

// prefixRows are the session's last turns' cache-integrity records, newest
// first (none when the slot is absent or unreadable).
func prefixRows(s *state.Session) []prefixRow {
	px, _ := turn.PrefixOf(s)
	if px == nil {
		return nil
	}
	out := make([]prefixRow, 0, len(px.Turns))
	for i := len(px.Turns) - 1; i >= 0; i-- {
		p := px.Turns[i]
		st := prefixWords(int64(p.BreakOffset), p.Cause)
		if p.First {
			st = "first turn of this conversation"
		}
		out = append(out, prefixRow{PrefixTurn: p, Status: st, Broken: p.Broken()})
	}
	return out
}

// prefixStatus is a turn's cache-integrity words from its request.finished
// data: "prefix intact", "prefix broken at byte N (cause)", or "" when the
// turn kept no record (a side request, a pass-through).
func prefixStatus(d map[string]any) string {
	if _, ok := d["prefix_hash"]; !ok {
		return ""
	}
	return prefixWords(num(d, "prefix_break_offset"), str(d, "prefix_break_cause"))
}

func prefixWords(offset int64, cause string) string {
	if offset < 0 {
		return "prefix intact"
	}
	return fmt.Sprintf("prefix broken at byte %d (%s)", offset, cause)
}
