package conv

// ToolResult is shepherd's own answer to one tool call the model made: the
// result of a call shepherd claimed (create_new_topic, select_active_intent)
// or the refusal of a call policy blocked. The turn engine stores it in the
// ledger with these JSON names.
type ToolResult struct {
	// CallID is the call's id ("" for a Gemini functionCall without id).
	CallID string `json:"call_id"`
	// Name is the called tool's name (Gemini functionResponse needs it).
	Name string `json:"name"`
	// Content is the result text the model reads.
	Content string `json:"content"`
	// IsError marks a refusal (Anthropic is_error; elsewhere the text says so).
	IsError bool `json:"is_error,omitempty"`
	// Freeform marks the answer to a free-form (custom) tool call
	// (conv.ToolCall.Freeform); Responses renders it as a
	// custom_tool_call_output item.
	Freeform bool `json:"freeform,omitempty"`
}
