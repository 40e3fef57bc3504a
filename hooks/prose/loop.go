package prose

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// ToolLoop reports whether req is a tool-loop request: the model's previous
// turn ended with tool calls and the agent sends their results, i.e. a
// message after the newest assistant message carries a tool result (the
// test routing's phase=tool_results applies). A request ending with an
// assistant message (a prefill) or with only user text is not.
func ToolLoop(req *conv.Request) bool {
	if req == nil {
		return false
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := &req.Messages[i]
		if m.Role == conv.RoleAssistant {
			return false
		}
		for j := range m.Blocks {
			if m.Blocks[j].Kind == conv.BlockToolResult {
				return true
			}
		}
	}
	return false
}
