package budgets

import (
	"fmt"
	"path"
	"strconv"

	"github.com/shepherd-proxy/shepherd/ruleline"
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
	return ruleline.Pairs(entries, "Tool=N", func(pat, v string) (ToolRule, error) {
		if _, err := path.Match(pat, ""); err != nil {
			return ToolRule{}, fmt.Errorf("bad pattern: %v", err)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return ToolRule{}, fmt.Errorf("%q is not a positive number of calls", v)
		}
		return ToolRule{Pattern: pat, Limit: n}, nil
	})
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
