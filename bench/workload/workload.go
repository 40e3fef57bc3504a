// Package workload builds the request bodies the benchmarks send: small and
// agent-shaped Anthropic Messages requests, generated deterministically so
// that the Go benchmarks and the load script (through cmd/benchtool) send
// byte-identical bodies from one run to the next.
package workload

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Headers are the request headers every Anthropic workload is sent with
// (besides Content-Type: application/json). The key is fake; the mock does
// not check it, but shepherd hashes it into a tenant id on every request.
var Headers = [][2]string{
	{"x-api-key", "sk-ant-bench-0000000000000000000000000000000000000000"},
	{"anthropic-version", "2023-06-01"},
}

// Path is the Anthropic Messages path.
const Path = "/v1/messages"

// Model is the model name sent in every request.
const Model = "claude-sonnet-4-5"

// Stream reply shape. The mock's reply to every workload is PadText bytes of
// text split into ChunkSize-character deltas: an Anthropic stream of
// message_start, content_block_start, PadText/ChunkSize deltas,
// content_block_stop, message_delta and message_stop, i.e. StreamEvents
// events. The non-streaming workloads get the same text as one JSON body.
const (
	PadText      = 1520
	ChunkSize    = 16
	StreamEvents = PadText/ChunkSize + 5
)

// Body is one named workload body.
type Body struct {
	// Name is the workload name used in file names and tables.
	Name string
	// Stream is true when the request asks for an SSE reply.
	Stream bool
	// JSON is the request body.
	JSON []byte
}

// All returns the load workloads in table order.
func All() []Body {
	return []Body{
		{Name: "small", JSON: AnthropicSmall(false)},
		{Name: "agent50k", JSON: AnthropicAgent(AgentTurns, false)},
		{Name: "stream", Stream: true, JSON: AnthropicSmall(true)},
	}
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

// AgentTurns is the number of tool round trips in the default agent request,
// which makes it about 50 KB.
const AgentTurns = 30

// AnthropicAgent is a coding-agent-shaped Messages request: a long system
// prompt in cached blocks, 12 tools with JSON schemas, a first user task and
// then turns tool round trips (assistant text + tool_use, user tool_result
// with a file-sized result), plus Claude Code style metadata. With 30 turns
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
		Metadata: &metadata{UserID: "user_5f0c3e1a9b7d2c4e6f8a0b1c3d5e7f9a_account_7d1f3b2a-0c4e-4a6b-8d9f-1e2c3b4a5d6e_session_0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
		Stream:   stream,
	}
	req.Messages = append(req.Messages, message{Role: "user", Content: []block{
		{Type: "text", Text: "The integration tests in ./proxy fail intermittently under load. Find the cause and fix it; run the tests to confirm."},
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

type messagesRequest struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	System    []block   `json:"system,omitempty"`
	Tools     []tool    `json:"tools,omitempty"`
	Messages  []message `json:"messages"`
	Metadata  *metadata `json:"metadata,omitempty"`
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
