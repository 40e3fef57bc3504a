package console

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/events"
)

// contextSummary is the activity line of the context features' events
// (prose, compaction, gating, format, budgets); "" for any other type.
func contextSummary(typ events.Type, d map[string]any) string {
	switch typ {
	case events.ProseDetected:
		s := fmt.Sprintf("prose %s · %d words", spaced(str(d, "kind")), num(d, "words"))
		if b, _ := d["nudged"].(bool); b {
			s += " · reminder sent next"
		}
		return s
	case events.ContextCompacted:
		return fmt.Sprintf("epoch %d · %d results compacted · %s chars kept, %s omitted · ~%s → ~%s tokens",
			num(d, "epoch"), num(d, "results"), tokens(num(d, "kept_chars")), tokens(num(d, "omitted_chars")),
			tokens(num(d, "estimated_tokens_before")), tokens(num(d, "estimated_tokens_after")))
	case events.HistoryGated:
		s := join(spaced(str(d, "decision")), str(d, "reason"))
		if n := num(d, "dropped"); n > 0 {
			s = join(s, fmt.Sprintf("%d earlier messages left out", n))
		}
		return s
	case events.FormatApplied:
		return "rule " + str(d, "rule")
	case events.BudgetReached:
		s := join(spaced(str(d, "budget")), str(d, "tool"))
		return join(s, fmt.Sprintf("spent %v of %v", d["spent"], d["limit"]))
	}
	return ""
}

// spaced turns a snake_case value into words ("new_topic" → "new topic").
func spaced(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '_' {
			b[i] = ' '
		}
	}
	return string(b)
}
