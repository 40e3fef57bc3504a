// Package conv is shepherd's neutral conversation model: the request and
// reply views codecs build from each wire API's JSON, the edits hooks ask
// for, the decisions they take on tool calls, the anchors that identify a
// point in a conversation, and the answers shepherd gives to tool calls
// itself. It imports no other package of the project: codecs (package
// rewrite and its API packages) and hooks (package hooks and its features)
// both depend on it, never the other way round.
package conv

import (
	"slices"

	"github.com/tidwall/gjson"
)

// Role is a normalised conversation role.
type Role string

// Normalised roles. Codecs map provider roles onto these: Gemini "model" and
// OpenAI "assistant" become RoleAssistant; OpenAI "system"/"developer" messages
// become RoleSystem; OpenAI "tool" messages and Responses function_call_output
// items become RoleTool.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// BlockKind is a normalised content-block kind.
type BlockKind string

// Normalised block kinds. Anything a codec does not recognise is BlockOther and
// is carried through untouched.
const (
	BlockText       BlockKind = "text"
	BlockThinking   BlockKind = "thinking" // includes redacted thinking and reasoning items
	BlockToolCall   BlockKind = "tool_call"
	BlockToolResult BlockKind = "tool_result"
	BlockOther      BlockKind = "other"
)

// Block is one content block of a message, as a read-only view.
type Block struct {
	Kind BlockKind
	// Text is the text of a text block (or the visible text of a thinking block).
	Text string
	// ToolCallID is the call id of a tool_call or tool_result block ("" where the
	// API has none, e.g. a Gemini functionCall without id).
	ToolCallID string
	// ToolName is the tool name of a tool_call (and of a tool_result where known).
	ToolName string
	// Args is the raw JSON of a tool call's arguments, exactly as on the wire
	// (for OpenAI the decoded content of the arguments string).
	Args []byte
	// IsError reports a tool_result flagged as an error.
	IsError bool
	// Freeform is true for a tool_call block of a free-form (custom) tool
	// call and for the tool_result block of its output. The call's Args is
	// then the JSON object {"input":"<text>"} (the text JSON-encoded), so
	// hooks read it like any call.
	Freeform bool
}

// Message is one turn of the conversation.
type Message struct {
	Role   Role
	Blocks []Block
	// Digest is MessageDigest of this message when the codec already knows
	// it (a view served from its cache of earlier requests), nil otherwise;
	// Anchors computes what is missing. Whoever changes Blocks after parsing
	// must clear it.
	Digest []byte
}

// ToolDef is a tool the request declares.
type ToolDef struct {
	Name string
}

// Request is the provider-neutral, read-only view of an upstream request body.
// It is built once per request by a codec; hooks must not modify it.
type Request struct {
	Model  string
	Stream bool
	// MaxOutputTokens is the output limit the request sets; HasMaxOutputTokens
	// is false when the field is absent.
	MaxOutputTokens    int64
	HasMaxOutputTokens bool
	// System is the concatenated text of the system prompt (Anthropic system,
	// Responses instructions, Gemini systemInstruction, OpenAI Chat leading
	// system/developer messages).
	System   string
	Tools    []ToolDef
	Messages []Message
	// Session hints found in the body.
	MetadataUserID string // Anthropic metadata.user_id
	PromptCacheKey string // OpenAI prompt_cache_key
	// Fingerprint is a stable hex hash of the system prompt and of every
	// message up to and including the first assistant message (their
	// anchors); the last-resort session id. It is "" for an opening request
	// (no assistant message yet, see Opening).
	Fingerprint string
	// PreviousResponseID is the Responses API previous_response_id ("" if none).
	PreviousResponseID string
	// Thinking reports that the request enables extended thinking where the
	// codec can tell (Anthropic thinking enabled or adaptive); such requests
	// cannot take an assistant prefill.
	Thinking bool
	// Side is the request's side-request kind (rewrite.SideRequest: "" for
	// an agent turn) when SideKnown: the codec classified it while parsing,
	// from the members it had found, so that nobody walks the body again.
	Side      string
	SideKnown bool
	// MessageAnchors is Anchors(Messages) when the codec computed it while
	// parsing (a long conversation's earlier anchors come from its memo of
	// the previous request), nil otherwise. Read it through Anchors;
	// whoever changes Messages must clear it.
	MessageAnchors []string
	// Lineage relates the body to the previous one the codec's index memo
	// kept for the conversation (zero: none).
	Lineage BodyLineage
}

// BodyLineage relates a request body to the earlier body its parse was
// compared with: Gen names this body's bytes, Prev the earlier body's (0:
// none), and their first Shared bytes are equal, compared byte for byte.
// Gens are never reused within a process, so whoever kept a copy of a body
// under its Gen knows, when a later body's Prev is that Gen, that the two
// share Shared bytes without comparing them again.
type BodyLineage struct {
	Gen, Prev uint64
	Shared    int
}

// Anchors returns Anchors(r.Messages), a slice the caller owns: from
// MessageAnchors when the codec filled it in, else computed.
func (r *Request) Anchors() []string {
	if r.hasAnchors() {
		return slices.Clone(r.MessageAnchors)
	}
	return Anchors(r.Messages)
}

// SharedAnchors is Anchors without the copy: the view's own slice when the
// codec filled it in (capped: an append copies), which the caller only
// reads.
func (r *Request) SharedAnchors() []string {
	if r.hasAnchors() {
		return slices.Clip(r.MessageAnchors)
	}
	return Anchors(r.Messages)
}

// hasAnchors reports whether the codec filled in MessageAnchors.
func (r *Request) hasAnchors() bool {
	return r.MessageAnchors != nil && len(r.MessageAnchors) == len(r.Messages)
}

// Opening reports whether the conversation has no assistant message yet: it
// starts (or starts over), so it has no earlier state of its own.
func (r *Request) Opening() bool {
	for i := range r.Messages {
		if r.Messages[i].Role == RoleAssistant {
			return false
		}
	}
	return true
}

// ToolLoop reports whether r is a tool-loop request: the model's previous
// turn ended with tool calls and the agent sends their results, i.e. a
// message after the newest assistant message carries a tool result. A
// request ending with an assistant message (a prefill) or with only user
// text is not; nil is not.
func (r *Request) ToolLoop() bool {
	if r == nil {
		return false
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := &r.Messages[i]
		if m.Role == RoleAssistant {
			return false
		}
		for j := range m.Blocks {
			if m.Blocks[j].Kind == BlockToolResult {
				return true
			}
		}
	}
	return false
}

// HasTool reports whether the request declares a tool with this name.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// StopReason is a normalised reason a reply ended.
type StopReason string

// Normalised stop reasons. StopMaxTokens covers Anthropic max_tokens, OpenAI
// finish_reason length, Responses incomplete/max_output_tokens and Gemini
// MAX_TOKENS. StopContextWindow is Anthropic model_context_window_exceeded.
const (
	StopNone          StopReason = ""
	StopEnd           StopReason = "end"
	StopToolUse       StopReason = "tool_use"
	StopMaxTokens     StopReason = "max_tokens"
	StopContextWindow StopReason = "context_window"
	StopSequence      StopReason = "stop_sequence"
	StopRefusal       StopReason = "refusal"
	StopPause         StopReason = "pause"
	StopOther         StopReason = "other"
)

// ToolCall is one tool call the model made in a reply.
type ToolCall struct {
	// Index is the call's position among the reply's tool calls (0-based).
	Index int
	ID    string
	Name  string
	// Args is the raw JSON of the arguments (for OpenAI, the decoded arguments
	// string). It may be invalid JSON when the reply was truncated.
	Args []byte
	// Freeform is true for a call of a free-form (custom) tool; its Args is
	// then the JSON object {"input":"<text>"} (the text JSON-encoded), so
	// hooks read it like any call.
	Freeform bool
}

// Usage is token accounting for a reply, normalised.
type Usage struct {
	// InputTokens counts the input tokens not read from or written to the
	// prompt cache (Anthropic's input_tokens; OpenAI's and Gemini's
	// prompt tokens minus their cached part), so the four fields add up
	// to the request's whole input and output.
	InputTokens  int64
	OutputTokens int64
	// CacheReadTokens counts input tokens read from the prompt cache;
	// CacheWriteTokens those written to it (Anthropic only; 0 elsewhere).
	CacheReadTokens  int64
	CacheWriteTokens int64
}

// Reply is the provider-neutral, read-only view of a complete model reply
// (a JSON body, or a stream once it has ended).
type Reply struct {
	Model     string
	Text      string // concatenation of all text blocks, in order
	ToolCalls []ToolCall
	Stop      StopReason
	// RawStop is the stop reason exactly as the provider wrote it.
	RawStop string
	Usage   Usage
}

// CallInput is a call's arguments as the model wrote them: for a free-form
// call (freeform set) the raw input text its Args wraps as
// {"input":"<text>"}, otherwise Args itself (also when a free-form Args
// holds no string input).
func CallInput(args []byte, freeform bool) []byte {
	if !freeform {
		return args
	}
	if in := gjson.GetBytes(args, "input"); in.Type == gjson.String {
		return []byte(in.Str)
	}
	return args
}
