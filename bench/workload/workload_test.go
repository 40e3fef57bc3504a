package workload

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBodies(t *testing.T) {
	names := map[string]bool{}
	for _, b := range append(All(), EventDelay()) {
		if names[b.Name] {
			t.Errorf("two workloads named %s", b.Name)
		}
		names[b.Name] = true
		var v struct {
			Model    string            `json:"model"`
			Stream   bool              `json:"stream"`
			Messages []json.RawMessage `json:"messages"`
			Tools    []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(b.JSON, &v); err != nil {
			t.Fatalf("%s: invalid JSON: %v", b.Name, err)
		}
		model, path, headers := Model, Path, Headers
		if b.API == APIChat {
			model, path, headers = ChatModel, ChatPath, ChatHeaders
		} else if b.API != APIAnthropic {
			t.Errorf("%s: API %q", b.Name, b.API)
		}
		if v.Model != model || v.Stream != b.Stream || len(v.Messages) == 0 || b.Path != path || !slices.Equal(b.Headers, headers) {
			t.Errorf("%s: model %q stream %v messages %d path %s headers %v", b.Name, v.Model, v.Stream, len(v.Messages), b.Path, b.Headers)
		}
		if b.Stream != (b.Events() > 0) {
			t.Errorf("%s: stream %v with %d events", b.Name, b.Stream, b.Events())
		}
		if got, ok := ByName(b.Name); !ok || !bytes.Equal(got.JSON, b.JSON) {
			t.Errorf("ByName(%s) = %v", b.Name, ok)
		}
		t.Logf("%s: %d bytes", b.Name, len(b.JSON))
	}
	if _, ok := ByName("nope"); ok {
		t.Error("ByName found an unknown workload")
	}
	agent := AnthropicAgent(AgentTurns, false)
	if n := len(agent); n < 45<<10 || n > 55<<10 {
		t.Errorf("agent body is %d bytes, want about 50 KB", n)
	}
	var v struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(agent, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Tools) != 12 || len(v.Messages) != 1+2*AgentTurns {
		t.Errorf("agent body has %d tools and %d messages", len(v.Tools), len(v.Messages))
	}
	if !bytes.Equal(agent, AnthropicAgent(AgentTurns, false)) {
		t.Error("agent body is not deterministic")
	}
	// The streamed agent body is the same request with "stream":true.
	streamed, _ := ByName("agent50k-stream")
	if !bytes.Equal(streamed.JSON, append(agent[:len(agent)-1:len(agent)-1], `,"stream":true}`...)) {
		t.Error("agent50k-stream is not agent50k with stream:true")
	}
}

func TestChatAgent(t *testing.T) {
	body := ChatAgent(AgentTurns, false)
	if n := len(body); n < 45<<10 || n > 55<<10 {
		t.Errorf("chat body is %d bytes, want about 50 KB", n)
	}
	if !bytes.Equal(body, ChatAgent(AgentTurns, false)) {
		t.Error("chat body is not deterministic")
	}
	var req struct {
		Model    string `json:"model"`
		Stream   *bool  `json:"stream"`
		Messages []struct {
			Role       string  `json:"role"`
			Content    *string `json:"content"`
			ToolCallID string  `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.Model != ChatModel || req.Stream != nil {
		t.Errorf("model %q, stream %v", req.Model, req.Stream)
	}
	if len(req.Tools) != 12 {
		t.Fatalf("%d tools, want 12", len(req.Tools))
	}
	tools := map[string]bool{}
	for _, tl := range req.Tools {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if tl.Type != "function" || tl.Function.Name == "" || tl.Function.Description == "" ||
			json.Unmarshal(tl.Function.Parameters, &schema) != nil || schema.Type != "object" || len(schema.Properties) == 0 {
			t.Errorf("tool %+v", tl)
		}
		tools[tl.Function.Name] = true
	}
	if len(req.Messages) != 2+2*AgentTurns {
		t.Fatalf("%d messages, want %d", len(req.Messages), 2+2*AgentTurns)
	}
	if m := req.Messages[0]; m.Role != "system" || m.Content == nil || len(*m.Content) < 8000 {
		t.Errorf("first message %q, %d bytes", m.Role, len(*m.Content))
	}
	if req.Messages[1].Role != "user" {
		t.Errorf("second message %q", req.Messages[1].Role)
	}
	for i := range AgentTurns {
		a, r := req.Messages[2+2*i], req.Messages[3+2*i]
		if a.Role != "assistant" || a.Content == nil || *a.Content == "" || len(a.ToolCalls) != 1 {
			t.Fatalf("round %d: assistant message %+v", i, a)
		}
		c := a.ToolCalls[0]
		if c.Type != "function" || !tools[c.Function.Name] || !json.Valid([]byte(c.Function.Arguments)) {
			t.Errorf("round %d: tool call %+v", i, c)
		}
		if r.Role != "tool" || r.ToolCallID != c.ID || r.Content == nil || len(*r.Content) < 600 ||
			!strings.Contains(*r.Content, "     1\t") {
			t.Errorf("round %d: tool message %+v (call %s)", i, r, c.ID)
		}
	}
	var s struct {
		Stream bool `json:"stream"`
	}
	if json.Unmarshal(ChatAgent(2, true), &s) != nil || !s.Stream {
		t.Error("ChatAgent(stream) does not ask for a stream")
	}
}

func TestShapes(t *testing.T) {
	for _, c := range []struct {
		shape  MockShape
		args   string
		events int
		desc   string
	}{
		{MockDefault, "-pad 1520 -chunk 16 -delay 0s", 100, "1520 B of text in 16-char deltas (100 events)"},
		{MockAgentStream, "-pad 4624 -chunk 16 -delay 0s -tools 1", 300, "4624 B of text in 16-char deltas, then a tool call (300 events)"},
		{MockStamped, "-pad 900 -chunk 20 -delay 2ms -stamp", 50, "45 text deltas, each carrying its send time (50 events, 2ms apart)"},
	} {
		if got := strings.Join(c.shape.Args(), " "); got != c.args {
			t.Errorf("%s: args %q, want %q", c.shape.Name, got, c.args)
		}
		if c.shape.Events != c.events {
			t.Errorf("%s: %d events, want %d", c.shape.Name, c.shape.Events, c.events)
		}
		if got := c.shape.Describe(); got != c.desc {
			t.Errorf("%s: %q, want %q", c.shape.Name, got, c.desc)
		}
	}
	if MockDefault.TextDeltas() != 95 || MockAgentStream.TextDeltas() != 289 || MockStamped.TextDeltas() != StampedDeltas ||
		(MockShape{Pad: 5, Chunk: -1}).TextDeltas() != 1 || (MockShape{Chunk: 16}).TextDeltas() != 0 {
		t.Error("TextDeltas")
	}
	if s := Shapes(); len(s) != 3 || s[0] != MockDefault {
		t.Errorf("shapes %v", s)
	}
	if MockStamped.Delay != 2*time.Millisecond || EventDelay().Mock != MockStamped || EventDelay().Events() != 50 {
		t.Error("event-delay workload")
	}
	small, _ := ByName("small")
	if small.Events() != 0 {
		t.Error("a JSON workload with stream events")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"50k": 51200, "1m": 1 << 20, "250K": 256000, "1.5m": 3 << 19, "4096": 4096} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1k", "0", "abc", "2g", "2000m"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}

func TestHistoryTurns(t *testing.T) {
	if got := HistoryTurns(50 << 10); got != AgentTurns {
		t.Errorf("HistoryTurns(50k) = %d, want AgentTurns (%d)", got, AgentTurns)
	}
	for _, size := range []int{1, 20000, 250 << 10} {
		n := HistoryTurns(size)
		if len(AnthropicAgent(n, false)) < size || (n > 0 && len(AnthropicAgent(n-1, false)) >= size) {
			t.Errorf("HistoryTurns(%d) = %d: not the smallest with at least that many bytes", size, n)
		}
	}
}

func TestAgentHistoryExtends(t *testing.T) {
	bodies := AgentHistory(3, 2)
	if len(bodies) != 3 {
		t.Fatalf("%d bodies, want 3", len(bodies))
	}
	for k := 1; k < len(bodies); k++ {
		prev, next := bodies[k-1], bodies[k]
		// The messages of the previous body are a byte prefix of the next
		// one's: everything up to the end of its last message.
		cut := bytes.Index(prev, []byte(`],"system"`))
		if cut < 0 || !bytes.HasPrefix(next, prev[:cut]) {
			t.Fatalf("body %d does not extend body %d", k, k-1)
		}
		var a, b struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(prev, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(next, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Messages) != len(a.Messages)+2 {
			t.Errorf("body %d: %d messages, want %d (one more round trip)", k, len(b.Messages), len(a.Messages)+2)
		}
	}
}

func TestAgentHistoryVariants(t *testing.T) {
	vs := AgentHistoryVariants(2, 2, 3)
	if len(vs) != 3 {
		t.Fatalf("%d variants", len(vs))
	}
	base := AgentHistory(2, 2)
	for v, bodies := range vs {
		for k, b := range bodies {
			var req struct {
				Messages []struct {
					Content []struct{ Text string }
				}
				Metadata struct {
					UserID string `json:"user_id"`
				}
			}
			if err := json.Unmarshal(b, &req); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(req.Metadata.UserID, "_session_"+VariantSession(v)) || VariantSession(v) == VariantSession(v+1) {
				t.Errorf("variant %d body %d: user_id %q, not the variant's own session", v, k, req.Metadata.UserID)
			}
			if want := AgentTask + " (agent " + string(rune('0'+v)) + ")"; req.Messages[0].Content[0].Text != want {
				t.Errorf("variant %d body %d: task %q, want %q", v, k, req.Messages[0].Content[0].Text, want)
			}
			if len(b) != len(base[k])+len(" (agent 0)") {
				t.Errorf("variant %d body %d: %d bytes, want the base's %d plus the tag", v, k, len(b), len(base[k]))
			}
			if k > 0 {
				prev := bodies[k-1]
				cut := bytes.Index(prev, []byte(`],"system"`))
				if !bytes.HasPrefix(b, prev[:cut]) {
					t.Errorf("variant %d body %d does not extend body %d", v, k, k-1)
				}
			}
		}
	}
	if bytes.Equal(vs[0][0], vs[1][0]) {
		t.Error("two variants alike")
	}
}
