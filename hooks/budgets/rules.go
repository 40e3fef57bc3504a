package budgets

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ToolRule caps the calls of the tools Pattern matches (a glob: * matches
// every tool) at Limit calls each per session.
type ToolRule struct {
	Pattern string
	Limit   int64
}

// ParseToolRules reads budgets.tool_calls: "Tool=N" entries, N a positive
// count. It lists every bad entry in its error.
func ParseToolRules(entries []string) ([]ToolRule, error) {
	out := make([]ToolRule, 0, len(entries))
	var bad []string
	for _, e := range entries {
		pat, v, ok := strings.Cut(e, "=")
		pat, v = strings.TrimSpace(pat), strings.TrimSpace(v)
		if !ok || pat == "" {
			bad = append(bad, fmt.Sprintf("%q is not Tool=N", e))
			continue
		}
		if _, err := path.Match(pat, ""); err != nil {
			bad = append(bad, fmt.Sprintf("%q: bad pattern: %v", e, err))
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			bad = append(bad, fmt.Sprintf("%q: %q is not a positive number of calls", e, v))
			continue
		}
		out = append(out, ToolRule{Pattern: pat, Limit: n})
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return out, nil
}

// toolLimit is the cap of the first rule matching tool (0: none).
func toolLimit(rules []ToolRule, tool string) int64 {
	for _, r := range rules {
		if ok, _ := path.Match(r.Pattern, tool); ok {
			return r.Limit
		}
	}
	return 0
}
