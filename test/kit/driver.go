package kit

import (
	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// Tool is a function tool an agent declares.
type Tool struct {
	Name        string
	Description string // "" leaves the description out
	Schema      string // JSON Schema of the arguments, raw JSON
}

// ReadTool is the one tool the test agents declare unless told otherwise.
var ReadTool = Tool{Name: "Read", Description: "Read a file", Schema: `{"type":"object"}`}

// Request.Limit values with a meaning of their own: NoLimit leaves the
// output limit out; ZeroLimit sends an explicit 0 (Anthropic's cache
// pre-warm).
const (
	NoLimit   = -1
	ZeroLimit = -2
)

// Request is what an agent sends on one turn, in no API's terms.
type Request struct {
	// Model is the model name; "" for the driver's DefaultModel.
	Model string
	// Limit is the output limit (max_tokens and its kin); 0 is the test
	// agents' default (none, except where the API requires one), NoLimit
	// none, ZeroLimit an explicit 0.
	Limit int
	// System is the system prompt; "" leaves it out.
	System string
	// Tools are the declared tools, in order.
	Tools []Tool
	// History is the conversation: raw items built with User, ToolResult
	// and Echo.
	History []string
	// Stream asks for a streamed reply.
	Stream bool
}

// Thinking is one thinking block (reasoning item, thought) of a reply or
// history. Sig is its signature (Responses encrypted_content; Gemini's
// decoded thoughtSignature).
type Thinking struct{ Text, Sig string }

// Reply is what an agent reads from one model reply.
type Reply struct {
	Text string
	// TextBlocks counts the text blocks (Anthropic), text parts (Gemini),
	// message items (Responses) holding the text; -1 where the API does not
	// tell (Chat; streamed Gemini deltas).
	TextBlocks int
	Calls      []mock.ToolCall
	// Stop is the stop value in the API's own terms (Responses: the
	// response status).
	Stop string
	// Incomplete is Responses' incomplete_details.reason.
	Incomplete string
	// Output is the output tokens of the reply's usage.
	Output   int64
	Thinking []Thinking
}

// HistItem is a tool call of the model or a tool result, in the order of a
// request's history.
type HistItem struct {
	Call    bool // a call (else a result)
	ID      string
	Name    string
	Args    string // calls: raw JSON arguments
	Content string // results: the text
	IsError bool   // results: marked as an error (Anthropic is_error, Gemini response.error)
}

// Stops are the stop values an agent reads for a finished text reply, a
// reply ending in tool calls, and a reply cut by the output limit, and the
// detail a cut reply carries besides ("" when none: Responses'
// incomplete_details.reason).
type Stops struct{ End, ToolUse, Cut, CutDetail string }

// Driver is one wire API as a test agent speaks it: how to build a
// request, where to send it, how to read the reply and a request's
// history, and how the API shapes its errors.
type Driver interface {
	// Name is the API's name: "anthropic", "openai_chat",
	// "openai_responses" or "gemini".
	Name() string
	// MockAPI is the mock provider's name of the API's generate route
	// (mock.Recorded.API).
	MockAPI() string
	// Headers returns a fresh copy of the API's test credential headers.
	Headers() map[string]string
	// DefaultModel is the model the test agents use unless told otherwise.
	DefaultModel() string
	// Path is the path (and query) of a generate request of model
	// ("" for DefaultModel), streamed or not.
	Path(model string, stream bool) string
	// Serves reports whether path (without query) is the API's
	// non-streaming generate route, whatever its prefix and model.
	Serves(path string) bool
	// MinimalReply is a minimal valid non-streaming reply with text "ok".
	MinimalReply() string
	// Route is shepherd's metric route label of Path(_, stream).
	Route(stream bool) string
	// Request renders r as a request body.
	Request(r Request) string
	// User is a user message of text as a history item.
	User(text string) string
	// ToolResult is the agent's result content for its call id (of tool
	// name) as a history item.
	ToolResult(id, name, content string) string
	// Echo is a non-streaming reply as the history items an official SDK
	// sends back.
	Echo(reply []byte) []string
	// ParseReply reads a non-streaming reply body.
	ParseReply(body []byte) (Reply, error)
	// ParseStream reads a streamed reply body (SSE, or Gemini's JSON
	// array), accumulated the way an SDK accumulates it.
	ParseStream(body []byte) (Reply, error)
	// DeclaredTools lists the names of the tools a request body declares.
	DeclaredTools(body []byte) []string
	// HistoryPath is the JSON path of a request's conversation array.
	HistoryPath() string
	// StaticPaths are the JSON paths that stay byte-identical on every
	// request of a session (tools, system prompt).
	StaticPaths() []string
	// LimitPath is the JSON path of a request's output limit.
	LimitPath() string
	// Stops are the API's stop values.
	Stops() Stops
	// ToolHistory lists the tool calls and results of a request body, in
	// order.
	ToolHistory(body []byte) []HistItem
	// MarksErrorResults reports whether the API marks a tool result as an
	// error (Anthropic is_error, Gemini response.error).
	MarksErrorResults() bool
	// RequiresLimit reports whether every request must carry an output
	// limit (Anthropic's max_tokens, where 0 is a cache pre-warm).
	RequiresLimit() bool
	// Prefill reports whether the API continues a final assistant message
	// (prefill).
	Prefill() bool
	// SignsThinking reports whether the API's thinking carries a signature
	// (Chat's reasoning_content has none).
	SignsThinking() bool
	// SystemInHistory reports whether the system prompt is the first item
	// of the conversation array (Chat).
	SystemInHistory() bool
	// OptionalCallIDs reports whether the model's tool calls may come
	// without ids (Gemini).
	OptionalCallIDs() bool
	// CallID is the id of the call named name in history items.
	CallID(items []string, name string) (string, bool)
	// ItemText is the visible text of a history item (thinking excluded).
	ItemText(item string) string
	// ThinkingRaw lists the raw thinking elements of history items:
	// Anthropic thinking blocks, Chat reasoning_content values, Responses
	// reasoning items, Gemini thought parts.
	ThinkingRaw(items []string) []string
	// Thinkings reads the thinking of history items, a stream's
	// consecutive chunks of one thought joined.
	Thinkings(items []string) ([]Thinking, error)
	// ErrorShape checks that body is an error in the API's own shape for
	// status.
	ErrorShape(status int, body []byte) error
	// ErrorType is an error body's type in the API's terms (error.type;
	// Gemini's error.status).
	ErrorType(body []byte) string
	// InvalidRequestType is ErrorType of the API's error for a malformed
	// request.
	InvalidRequestType() string
	// StreamErrorShape checks that ev, the last event of a stream cut
	// short, is the API's in-stream error for status.
	StreamErrorShape(status int, ev Event) error
	// SideRequest is how a tool-bearing request of the API becomes a side
	// request: shepherd's kind label for it, and the member (JSON path and
	// raw value) that makes it one.
	SideRequest() (kind, path, value string)
}
