// Package workload builds the request bodies the benchmarks send: small and
// agent-shaped Anthropic Messages requests and an agent-shaped OpenAI Chat
// Completions request, generated deterministically so that the Go
// benchmarks and the load script (through cmd/benchtool) send
// byte-identical bodies from one run to the next. It also names the reply
// shapes the mock provider serves them with (MockShape).
package workload

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers are the request headers every Anthropic workload is sent with
// (besides Content-Type: application/json). The key is fake; the mock does
// not check it, but shepherd hashes it into a tenant id on every request.
var Headers = [][2]string{
	{"x-api-key", "sk-ant-bench-0000000000000000000000000000000000000000"},
	{"anthropic-version", "2023-06-01"},
}

// ChatHeaders are the request headers of the OpenAI Chat Completions
// workload (a fake key, as for Headers).
var ChatHeaders = [][2]string{
	{"Authorization", "Bearer sk-bench-0000000000000000000000000000000000000000"},
}

// Path is the Anthropic Messages path.
const Path = "/v1/messages"

// ChatPath is the OpenAI Chat Completions path.
const ChatPath = "/v1/chat/completions"

// Model is the model name sent in every Anthropic request.
const Model = "claude-sonnet-4-5"

// ChatModel is the model name of the Chat Completions request.
const ChatModel = "gpt-4.1"

// The APIs a Body is sent to.
const (
	APIAnthropic = "anthropic"
	APIChat      = "chat"
)

// Stream reply shape. The mock's reply to every workload is PadText bytes of
// text split into ChunkSize-character deltas: an Anthropic stream of
// message_start, content_block_start, PadText/ChunkSize deltas,
// content_block_stop, message_delta and message_stop, i.e. StreamEvents
// events. The non-streaming workloads get the same text as one JSON body.
// (MockDefault is this shape.)
const (
	PadText      = 1520
	ChunkSize    = 16
	StreamEvents = PadText/ChunkSize + 5
)

// MockShape is one reply shape of the mock provider (cmd/mockprovider
// serves one shape per process): Pad bytes of text in Chunk-character
// deltas, then Tools tool calls, Delay between stream events; Stamp replaces
// the text of every stream text delta with its send time (Unix nanoseconds,
// see mock.Options.StampText). Events is the number of events of the
// Anthropic stream it gives (checked against the mock by the tests of
// cmd/mockprovider and cmd/benchtool).
type MockShape struct {
	Name              string
	Pad, Chunk, Tools int
	Delay             time.Duration
	Stamp             bool
	Events            int
}

// The mock shapes of the load script; each runs as its own mock process
// with its own proxies in front (a "fleet" in load.sh).
var (
	// MockDefault serves the JSON workloads and the small stream: 1,520 B of
	// text, 100 stream events.
	MockDefault = MockShape{Name: "default", Pad: PadText, Chunk: ChunkSize, Events: StreamEvents}
	// MockAgentStream serves the streamed agent request: 4,624 B of text in
	// 289 deltas, then one tool call (3 argument deltas), 300 events.
	MockAgentStream = MockShape{Name: "agent-stream", Pad: AgentStreamPad, Chunk: ChunkSize, Tools: 1, Events: AgentStreamEvents}
	// MockStamped serves the per-event delay phase: 45 text deltas, each
	// stamped with its send time, 2 ms apart, 50 events.
	MockStamped = MockShape{Name: "stamped", Pad: StampedDeltas * StampedChunk, Chunk: StampedChunk,
		Delay: StampedDelay, Stamp: true, Events: StampedDeltas + 5}
)

// The agent stream's text and event count: AgentStreamPad/ChunkSize = 289
// text deltas, plus message_start, the text block's start and stop, the
// tool_use block's start, an empty and 3 argument deltas and its stop,
// message_delta and message_stop.
const (
	AgentStreamPad    = 4624
	AgentStreamEvents = AgentStreamPad/ChunkSize + 11
)

// The stamped stream: StampedDeltas text deltas of StampedChunk characters
// (a 19-digit time stamp and a space), StampedDelay apart.
const (
	StampedDeltas = 45
	StampedChunk  = 20
	StampedDelay  = 2 * time.Millisecond
)

// Shapes lists the mock shapes, default first.
func Shapes() []MockShape { return []MockShape{MockDefault, MockAgentStream, MockStamped} }

// Args are the cmd/mockprovider flags that serve this shape (besides -addr
// and -no-record).
func (m MockShape) Args() []string {
	a := []string{"-pad", strconv.Itoa(m.Pad), "-chunk", strconv.Itoa(m.Chunk), "-delay", m.Delay.String()}
	if m.Tools > 0 {
		a = append(a, "-tools", strconv.Itoa(m.Tools))
	}
	if m.Stamp {
		a = append(a, "-stamp")
	}
	return a
}

// TextDeltas is the number of text deltas of the stream.
func (m MockShape) TextDeltas() int {
	if m.Pad <= 0 {
		return 0
	}
	if m.Chunk <= 0 {
		return 1
	}
	return (m.Pad + m.Chunk - 1) / m.Chunk
}

// Describe is a short human description of the reply, for the reports.
func (m MockShape) Describe() string {
	var b strings.Builder
	deltas := m.TextDeltas()
	if m.Stamp {
		fmt.Fprintf(&b, "%d text deltas, each carrying its send time", deltas)
	} else {
		fmt.Fprintf(&b, "%d B of text in %d-char deltas", m.Pad, m.Chunk)
	}
	if m.Tools == 1 {
		b.WriteString(", then a tool call")
	} else if m.Tools > 1 {
		fmt.Fprintf(&b, ", then %d tool calls", m.Tools)
	}
	fmt.Fprintf(&b, " (%d events", m.Events)
	if m.Delay > 0 {
		fmt.Fprintf(&b, ", %v apart", m.Delay)
	}
	b.WriteString(")")
	return b.String()
}

// Body is one named workload body.
type Body struct {
	// Name is the workload name used in file names and tables.
	Name string
	// API is APIAnthropic or APIChat; Path and Headers are where and how the
	// body is sent (besides Content-Type: application/json).
	API     string
	Path    string
	Headers [][2]string
	// Stream is true when the request asks for an SSE reply.
	Stream bool
	// JSON is the request body.
	JSON []byte
	// Mock is the reply shape it is served with.
	Mock MockShape
	// Summary describes the request for the reports.
	Summary string
}

// Events is the number of SSE events of the reply (0 for a JSON reply).
func (b Body) Events() int {
	if !b.Stream {
		return 0
	}
	return b.Mock.Events
}

// All returns the load workloads in table order.
func All() []Body {
	return []Body{
		anthropic("small", false, AnthropicSmall(false), MockDefault, smallSummary),
		anthropic("agent50k", false, AnthropicAgent(AgentTurns, false), MockDefault, agentSummary),
		{Name: "chat50k", API: APIChat, Path: ChatPath, Headers: ChatHeaders, JSON: ChatAgent(AgentTurns, false), Mock: MockDefault,
			Summary: agentSummary},
		anthropic("stream", true, AnthropicSmall(true), MockDefault, smallSummary),
		anthropic("agent50k-stream", true, AnthropicAgent(AgentTurns, true), MockAgentStream, agentSummary),
	}
}

// EventDelay is the body of the per-event delay phase: the small stream
// request, served by MockStamped.
func EventDelay() Body {
	return anthropic("stamped", true, AnthropicSmall(true), MockStamped, smallSummary)
}

// ByName finds a workload of All, or EventDelay.
func ByName(name string) (Body, bool) {
	for _, b := range append(All(), EventDelay()) {
		if b.Name == name {
			return b, true
		}
	}
	return Body{}, false
}

const (
	smallSummary = "one user turn"
	agentSummary = "agent-shaped: long system prompt, 12 tools, 30 tool round trips"
)

func anthropic(name string, stream bool, body []byte, shape MockShape, summary string) Body {
	return Body{Name: name, API: APIAnthropic, Path: Path, Headers: Headers, Stream: stream, JSON: body, Mock: shape,
		Summary: summary}
}

// AnthropicSmall is a one-turn Messages request (about 200 bytes).
func AnthropicSmall(stream bool) []byte {
	req := messagesRequest{
		Model:     Model,
		MaxTokens: 1024,
		Messages: []message{{
			Role:    "user",
			Content: "Write a haiku about a reverse proxy that never drops a byte.",
		}},
		Stream: stream,
	}
	return marshal(req)
}

// AgentTask is the first user message of the agent requests (AnthropicAgent,
// ChatAgent).
const AgentTask = "The integration tests in ./proxy fail intermittently under load. Find the cause and fix it; run the tests to confirm."

// AgentTurns is the number of tool round trips in the default agent request,
// which makes it about 50 KB.
const AgentTurns = 30

// AgentSession is the session id in AnthropicAgent's metadata.user_id, as
// Claude Code puts its session's id there.
const AgentSession = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

// AnthropicAgent is a coding-agent-shaped Messages request: a long system
// prompt in cached blocks, 12 tools with JSON schemas, a first user task and
// then turns tool round trips (assistant text + tool_use, user tool_result
// with a file-sized result), plus Claude Code style metadata, its members
// in Claude Code's order (messages before system and tools). With 30 turns
// it is about 50 KB.
func AnthropicAgent(turns int, stream bool) []byte {
	g := &gen{state: 0x9E3779B97F4A7C15}
	req := messagesRequest{
		Model:     Model,
		MaxTokens: 32000,
		System: []block{
			{Type: "text", Text: "You are an interactive CLI coding agent. Use the tools to help the user with software engineering tasks."},
			{Type: "text", Text: g.prose(8000), CacheControl: &cacheControl{Type: "ephemeral"}},
		},
		Tools:    agentTools(g),
		Metadata: &metadata{UserID: "user_5f0c3e1a9b7d2c4e6f8a0b1c3d5e7f9a_account_7d1f3b2a-0c4e-4a6b-8d9f-1e2c3b4a5d6e_session_" + AgentSession},
		Stream:   stream,
	}
	req.Messages = append(req.Messages, message{Role: "user", Content: []block{
		{Type: "text", Text: AgentTask},
	}})
	tools := req.Tools
	for i := range turns {
		tool := tools[i%len(tools)]
		id := fmt.Sprintf("toolu_01%022d", i+1)
		input := fmt.Sprintf(`{"path":"proxy/file_%02d.go","offset":%d,"limit":200}`, i, i*40)
		req.Messages = append(req.Messages,
			message{Role: "assistant", Content: []block{
				{Type: "text", Text: g.prose(120)},
				{Type: "tool_use", ID: id, Name: tool.Name, Input: json.RawMessage(input)},
			}},
			message{Role: "user", Content: []block{
				{Type: "tool_result", ToolUseID: id, Content: g.code(600)},
			}},
		)
	}
	return marshal(req)
}

func agentTools(g *gen) []tool {
	names := []string{"Read", "Write", "Edit", "MultiEdit", "Bash", "Glob", "Grep", "LS", "WebFetch", "TodoWrite", "Task", "NotebookEdit"}
	out := make([]tool, len(names))
	for i, n := range names {
		schema := fmt.Sprintf(`{"type":"object","properties":{`+
			`"path":{"type":"string","description":%q},`+
			`"pattern":{"type":"string","description":%q},`+
			`"limit":{"type":"integer","minimum":1,"description":"Maximum number of lines or results to return."},`+
			`"options":{"type":"object","additionalProperties":{"type":"string"}}},`+
			`"required":["path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
			g.prose(60), g.prose(60))
		out[i] = tool{Name: n, Description: g.prose(260), InputSchema: json.RawMessage(schema)}
	}
	return out
}

// ChatAgent is the OpenAI Chat Completions counterpart of AnthropicAgent,
// from the same generator and seed: a system message (the short preamble
// and the 8 KB prompt), the same 12 tools as {"type":"function",...} with
// their JSON schemas, the user task, then turns rounds of an assistant
// message (text content and one tool_calls entry) and a tool message with
// the ~600 B of numbered source. With 30 turns it is about 50 KB.
func ChatAgent(turns int, stream bool) []byte {
	g := &gen{state: 0x9E3779B97F4A7C15}
	system := "You are an interactive CLI coding agent. Use the tools to help the user with software engineering tasks.\n\n" + g.prose(8000)
	tools := agentTools(g)
	req := chatRequest{
		Model:               ChatModel,
		MaxCompletionTokens: 32000,
		Stream:              stream,
		Messages: []chatMessage{
			{Role: "system", Content: system},
			{Role: "user", Content: AgentTask},
		},
	}
	for _, t := range tools {
		req.Tools = append(req.Tools, chatTool{Type: "function",
			Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	for i := range turns {
		tool := tools[i%len(tools)]
		id := fmt.Sprintf("call_%024d", i+1)
		args := fmt.Sprintf(`{"path":"proxy/file_%02d.go","offset":%d,"limit":200}`, i, i*40)
		req.Messages = append(req.Messages,
			chatMessage{Role: "assistant", Content: g.prose(120), ToolCalls: []chatToolCall{{
				ID: id, Type: "function", Function: chatCall{Name: tool.Name, Arguments: args},
			}}},
			chatMessage{Role: "tool", ToolCallID: id, Content: g.code(600)},
		)
	}
	return marshal(req)
}

type chatRequest struct {
	Model               string        `json:"model"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Messages            []chatMessage `json:"messages"`
	Tools               []chatTool    `json:"tools,omitempty"`
	Stream              bool          `json:"stream,omitempty"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function chatCall `json:"function"`
}

type chatCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text, as the API sends it
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// messagesRequest is a Messages request in the order Claude Code writes
// its members: the conversation first, then the system prompt and tools
// (which an agent resends unchanged after its growing conversation),
// metadata, max_tokens and stream.
type messagesRequest struct {
	Model     string    `json:"model"`
	Messages  []message `json:"messages"`
	System    []block   `json:"system,omitempty"`
	Tools     []tool    `json:"tools,omitempty"`
	Metadata  *metadata `json:"metadata,omitempty"`
	MaxTokens int       `json:"max_tokens"`
	Stream    bool      `json:"stream,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or []block
}

type block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // static shapes: cannot fail
	}
	return b
}

// gen is a tiny deterministic text generator (xorshift64*), independent of
// math/rand so the bodies never change with the Go version.
type gen struct{ state uint64 }

func (g *gen) next() uint64 {
	g.state ^= g.state >> 12
	g.state ^= g.state << 25
	g.state ^= g.state >> 27
	return g.state * 2685821657736338717
}

var words = strings.Fields(`the proxy request response stream event upstream client session
header body token model tool result agent context cache buffer flush latency
connection timeout retry error handler route config value state store write read
parse forward byte chunk server test load fast slow every never always when then
because which should would could must may this that with from into over under`)

// prose returns about n bytes of sentence-like text.
func (g *gen) prose(n int) string {
	var sb strings.Builder
	sb.Grow(n + 16)
	start := true
	for sb.Len() < n {
		w := words[g.next()%uint64(len(words))]
		if start {
			sb.WriteString(strings.ToUpper(w[:1]))
			sb.WriteString(w[1:])
			start = false
		} else {
			sb.WriteString(w)
		}
		if g.next()%9 == 0 {
			sb.WriteString(". ")
			start = true
		} else {
			sb.WriteByte(' ')
		}
	}
	return strings.TrimSpace(sb.String())
}

// code returns about n bytes of numbered Go-like source lines, the shape of
// a Read tool result (tabs, quotes and newlines exercise JSON escaping).
func (g *gen) code(n int) string {
	var sb strings.Builder
	sb.Grow(n + 64)
	for line := 1; sb.Len() < n; line++ {
		a := words[g.next()%uint64(len(words))]
		b := words[g.next()%uint64(len(words))]
		switch g.next() % 4 {
		case 0:
			fmt.Fprintf(&sb, "%6d\tfunc (s *%s) %s(ctx context.Context) error {\n", line, a, b)
		case 1:
			fmt.Fprintf(&sb, "%6d\t\tif err := s.%s(%q); err != nil {\n", line, a, b)
		case 2:
			fmt.Fprintf(&sb, "%6d\t\treturn fmt.Errorf(\"%s: %%w\", err)\n", line, a)
		default:
			fmt.Fprintf(&sb, "%6d\t}\n", line)
		}
	}
	return sb.String()
}
