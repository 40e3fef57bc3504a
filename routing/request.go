package routing

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// Request is what a rule is matched against.
type Request struct {
	// API is the route's wire API (a descriptor Name) and Family its
	// provider family.
	API    string
	Family string
	// Model is the model the agent asked for.
	Model string
	// Agent is the client as the proxy recognised it ("" when unknown).
	Agent string
	Kind  Kind
	// InputTokens is the estimated input size (EstimateTokens).
	InputTokens int64
	// Phase is where the request stands in the tool loop (PhaseOf).
	Phase Phase
}

// EstimateTokens estimates a request's input tokens from its body size: a
// byte budget of four bytes per token, the common rule of thumb for
// English text and JSON. It is cheap and deterministic, not exact: a rule's
// bounds are coarse on purpose.
func EstimateTokens(bodyBytes int) int64 { return int64(bodyBytes) / 4 }

// KindOf classifies a request: side when the codec's side-request check
// named one, subagent when the agent marked it a subagent's, else main.
func KindOf(side string, subagent bool) Kind {
	switch {
	case side != "":
		return KindSide
	case subagent:
		return KindSubagent
	}
	return KindMain
}

// PhaseOf says where a request stands in its agent's tool loop, from the
// messages after the newest assistant message: PhasePrompt when they carry
// the user's own text and no tool result, PhaseToolResults when they carry
// tool results, PhaseEdit when every one of those results answers a call
// of a file-edit tool (isEdit; the proxy's are the write tools of the
// edits recognizer's built-in table, hooks/edits/recognize) (the tool is the result's own name where the API gives one,
// else the name of the call with its id in the newest assistant message).
// PhaseNone when the conversation ends with an assistant message (a
// prefill) or carries nothing of either.
func PhaseOf(v *conv.Request, isEdit func(tool string) bool) Phase {
	if v == nil {
		return PhaseNone
	}
	last := -1
	for i := len(v.Messages) - 1; i >= 0; i-- {
		if v.Messages[i].Role == conv.RoleAssistant {
			last = i
			break
		}
	}
	var results, edits int
	text := false
	for _, m := range v.Messages[last+1:] {
		for _, b := range m.Blocks {
			switch b.Kind {
			case conv.BlockToolResult:
				results++
				if isEdit(toolOf(v, last, b)) {
					edits++
				}
			case conv.BlockText:
				if m.Role == conv.RoleUser {
					text = true
				}
			}
		}
	}
	switch {
	case results > 0 && edits == results:
		return PhaseEdit
	case results > 0:
		return PhaseToolResults
	case text:
		return PhasePrompt
	}
	return PhaseNone
}

// toolOf names the tool a result answers.
func toolOf(v *conv.Request, assistant int, b conv.Block) string {
	if b.ToolName != "" || assistant < 0 {
		return b.ToolName
	}
	for _, c := range v.Messages[assistant].Blocks {
		if c.Kind == conv.BlockToolCall && c.ToolCallID != "" && c.ToolCallID == b.ToolCallID {
			return c.ToolName
		}
	}
	return ""
}
