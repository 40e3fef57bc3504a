package conv

// ToolSpec is a tool definition a hook asks to add to a request. Codecs render
// it in their own API's shape (Anthropic input_schema, OpenAI Chat function,
// Responses flat function, Gemini functionDeclarations).
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, as raw JSON (an object).
	Parameters []byte
}

// RequestEdits are the changes hooks ask for on one request. The zero value
// changes nothing. Codecs apply them to the original request bytes in a fixed
// order (tools, system, user text, output limit) so the result is deterministic:
// the same edits on the same bytes always give the same bytes.
type RequestEdits struct {
	// AddTools are appended, in order, after the request's own tools.
	AddTools []ToolSpec
	// AppendSystem texts are appended, in order, to the system prompt as new
	// text (a new system block where the API has blocks).
	AppendSystem []string
	// AppendUserText texts are appended, in order, as text at the end of the
	// newest user turn (after any tool results and cache breakpoints there).
	AppendUserText []string
	// SetMaxOutputTokens, when > 0, sets the request's output limit.
	SetMaxOutputTokens int64
	// ReplaceResults replace the content of tool results the agent sent
	// (evidence compaction). Positions are the request view's; the turn
	// engine applies them to the agent's body before the ledger replay, so
	// a hook that wants the model's view to stay append-only must send the
	// same replacement, byte for byte, on every later request.
	ReplaceResults []ResultEdit
	// DropBefore, when > 0, leaves out of the request every message of the
	// view before index DropBefore except system messages (history gating:
	// a new topic of a chat app starts from the system prompt). The newest
	// user turn is never dropped: DropBefore is capped at its index.
	DropBefore int
}

// ResultEdit replaces the content of one tool-result block of the request
// view: Messages[Msg].Blocks[Block], which must be a BlockToolResult. The
// codec writes Text as the result's whole content, as text (Anthropic a
// string content, Chat the tool message's content, Responses the output,
// Gemini response {"content": Text}); the call id, tool name and error
// flag stay as they were.
type ResultEdit struct {
	Msg, Block int
	Text       string
}

// Empty reports whether the edits change nothing.
func (e *RequestEdits) Empty() bool {
	return len(e.AddTools) == 0 && len(e.AppendSystem) == 0 &&
		len(e.AppendUserText) == 0 && e.SetMaxOutputTokens == 0 &&
		len(e.ReplaceResults) == 0 && e.DropBefore == 0
}

// MergeAll is the edits of parts merged in order: each list is the parts'
// lists one after another; a later SetMaxOutputTokens wins; of two
// DropBefore the larger wins; a later replacement of the same result block
// wins (ApplyResultEdits keeps the last). It makes one allocation per list
// that more than one part adds to: a list only one part adds to is that
// part's (capped, so an append to the result copies it). The request
// hooks' edits are merged on every request.
func MergeAll(parts []RequestEdits) RequestEdits {
	var out RequestEdits
	if len(parts) == 0 {
		return out
	}
	out.AddTools = concat(parts, func(e *RequestEdits) []ToolSpec { return e.AddTools })
	out.AppendSystem = concat(parts, func(e *RequestEdits) []string { return e.AppendSystem })
	out.AppendUserText = concat(parts, func(e *RequestEdits) []string { return e.AppendUserText })
	out.ReplaceResults = concat(parts, func(e *RequestEdits) []ResultEdit { return e.ReplaceResults })
	for i := range parts {
		if parts[i].SetMaxOutputTokens > 0 {
			out.SetMaxOutputTokens = parts[i].SetMaxOutputTokens
		}
		out.DropBefore = max(out.DropBefore, parts[i].DropBefore)
	}
	return out
}

// concat joins the list field of every part, in order.
func concat[T any](parts []RequestEdits, field func(*RequestEdits) []T) []T {
	n, from := 0, -1
	for i := range parts {
		if l := len(field(&parts[i])); l > 0 {
			n += l
			if from < 0 {
				from = i
			}
		}
	}
	if n == 0 {
		return nil
	}
	if first := field(&parts[from]); len(first) == n {
		return first[:n:n]
	}
	out := make([]T, 0, n)
	for i := from; i < len(parts); i++ {
		out = append(out, field(&parts[i])...)
	}
	return out
}

// Verdict is what a reply hook decides about one tool call.
type Verdict int

const (
	// Pass leaves the call to the agent.
	Pass Verdict = iota
	// Claim means shepherd answers the call itself with Result; the agent
	// never sees the call.
	Claim
	// Refuse blocks the call: the model receives Result as an error tool
	// result; the agent never sees the call.
	Refuse
	// Hold asks a person: the turn engine holds the call until it is
	// approved (then it passes) or denied or expires (then it is refused
	// with the reason given). Result is the reason shown to the person
	// and, unless the denial says otherwise, to the model.
	Hold
)

// CallDecision is a reply hook's decision on one tool call of a reply.
type CallDecision struct {
	// CallIndex is ToolCall.Index of the call decided on.
	CallIndex int
	Verdict   Verdict
	// Result is the tool-result text given to the model for Claim and Refuse.
	Result string
	// Rule names the policy rule behind a Refuse or Hold, for display
	// ("" when none).
	Rule string
	// Hook names the hook that decided; the chain sets it (a hook leaves
	// it empty).
	Hook string
}

// Continuation says how the turn engine continues a reply cut by the output
// limit.
type Continuation struct {
	// Prefill continues the partial reply as an assistant prefill; otherwise
	// Instruction is sent as a user message after the partial reply.
	Prefill     bool
	Instruction string
	// DropCalls discards the reply's tool calls (the limit cut one of
	// them): the agent never gets them and the model makes them again.
	DropCalls bool
	// MaxOutputTokens, when > 0, is the output limit of the continuation
	// request (raised after a cut tool call).
	MaxOutputTokens int64
}
