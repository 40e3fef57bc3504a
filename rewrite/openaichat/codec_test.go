package openaichat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestChatParseRequest(t *testing.T) {
	req, err := apitest.CodecFor(Descriptor).ParseRequest(apitest.Fixture(t, Descriptor, "request.json"))
	require.NoError(t, err)
	require.Len(t, req.Fingerprint, 32)
	req.Fingerprint = ""
	req.Messages = apitest.StripDigests(t, req.Messages)
	require.Equal(t, &conv.Request{SideKnown: true, // an agent turn: Side ""
		Model: "gpt-4.1", Stream: true, MaxOutputTokens: 1024, HasMaxOutputTokens: true,
		System:         "You are terse.\n\nPrefer Go.",
		Tools:          []conv.ToolDef{{Name: "read_file"}},
		PromptCacheKey: "conv-42",
		Messages: []conv.Message{
			{Role: conv.RoleSystem, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "You are terse."}}},
			{Role: conv.RoleSystem, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "Prefer Go."}}},
			{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "Show me main.go"}}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				{Kind: conv.BlockToolCall, ToolCallID: "call_a", ToolName: "read_file", Args: []byte(`{"path":"main.go"}`)},
			}},
			{Role: conv.RoleTool, Blocks: []conv.Block{
				{Kind: conv.BlockToolResult, ToolCallID: "call_a", ToolName: "read_file", Text: "package main\n"},
			}},
		},
	}, req)
}

func TestChatParseRequestDetails(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	req, err := c.ParseRequest([]byte(`{"max_tokens":77,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]},
	  {"role":"system","content":"late system"},{"role":"assistant","content":"ok","function_call":{"name":"f","arguments":"{}"}},
	  {"role":"tool","tool_call_id":"c1","name":"f","content":[{"type":"text","text":"r1"},{"type":"text","text":"r2"}]}]}`))
	require.NoError(t, err)
	require.Equal(t, int64(77), req.MaxOutputTokens)
	require.Empty(t, req.System, "only leading system messages form the system prompt")
	require.Equal(t, []conv.Block{{Kind: conv.BlockText, Text: "a"}, {Kind: conv.BlockOther}}, req.Messages[0].Blocks)
	require.Equal(t, conv.RoleSystem, req.Messages[1].Role)
	require.Equal(t, []conv.Block{{Kind: conv.BlockText, Text: "ok"}, {Kind: conv.BlockToolCall, ToolName: "f", Args: []byte(`{}`)}}, req.Messages[2].Blocks)
	require.Equal(t, []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "c1", ToolName: "f", Text: "r1\nr2"}}, req.Messages[3].Blocks)
}

// TestChatToolNames: a function tool is named by function.name, a custom
// tool by custom.name (function first when a tool has both), wherever the
// member sits among the others; a tool without either name is not listed.
func TestChatToolNames(t *testing.T) {
	schema := `"parameters":{"type":"object","properties":{"name":{"type":"string"}}}`
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` +
		`{"type":"function","function":{"name":"read","description":"d",` + schema + `}},` +
		`{"function":{"description":"d",` + schema + `,"name":"write"},"type":"function"},` +
		`{"type":"custom","custom":{"name":"apply_patch","format":{"type":"grammar"}}},` +
		`{"custom":{"name":"second"},"function":{"name":"first"}},` +
		`{"type":"function","function":{"name":""}}]}`
	req, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(body))
	require.NoError(t, err)
	require.Equal(t, []conv.ToolDef{{Name: "read"}, {Name: "write"}, {Name: "apply_patch"}, {Name: "first"}}, req.Tools)

	req, err = apitest.CodecFor(Descriptor).ParseRequest([]byte(`{"model":"m","messages":[],"tools":[{"type":"function","function":{"description":"no name"}}]}`))
	require.NoError(t, err)
	require.Empty(t, req.Tools)
}

func TestChatMalformed(t *testing.T) {
	tests := []struct{ body, field string }{
		{`{"messages":"hi"}`, "messages must be an array"},
		{`{"max_completion_tokens":"1"}`, "max_completion_tokens must be a number"},
		{`{"max_tokens":true}`, "max_tokens must be a number"},
		{`{"stream":1}`, "stream must be a boolean"},
		{`{"prompt_cache_key":1}`, "prompt_cache_key must be a string"},
		{`{"tools":[{"type":"function","function":{"name":1}}]}`, "tools[0].function.name must be a string"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content must be a string or an array"},
		{`{"messages":[{"role":"user","content":[5]}]}`, "messages[0].content[0] must be an object"},
		{`{"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls must be an array"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":{}}}]}]}`, "messages[0].tool_calls[0].function.arguments must be a string"},
		{`{"messages":[{"role":"tool","tool_call_id":3,"content":"x"}]}`, "messages[0].tool_call_id must be a string"},
	}
	for _, tt := range tests {
		_, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(tt.body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, tt.body)
		require.EqualError(t, err, "rewrite: malformed request body: "+tt.field)
	}
}

func TestChatApplyEdits(t *testing.T) {
	tool := conv.ToolSpec{Name: "t", Description: "d", Parameters: []byte(`{"type":"object"}`)}
	tests := []struct {
		name  string
		body  string
		edits conv.RequestEdits
		want  string
	}{
		{"tools append", `{"messages":[],"tools":[{"type":"function","function":{"name":"a"}}]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"messages":[],"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object"}}}]}`},
		{"tools absent", `{"messages":[]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{{Name: "x", Parameters: []byte(`{}`)}}},
			`{"messages":[],"tools":[{"type":"function","function":{"name":"x","parameters":{}}}]}`},
		{"system string", `{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}]}`,
			conv.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"messages":[{"role":"system","content":"S\n\nA\n\nB"},{"role":"user","content":"q"}]}`},
		{"developer parts", `{"messages":[{"role":"developer","content":[{"type":"text","text":"S"}]}]}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"messages":[{"role":"developer","content":[{"type":"text","text":"S"},{"type":"text","text":"A"}]}]}`},
		{"system inserted", `{"messages": [ {"role":"user","content":"q"} ]}`,
			conv.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"messages": [{"role":"system","content":"A\n\nB"}, {"role":"user","content":"q"} ]}`},
		{"system into empty messages", `{"messages":[]}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"messages":[{"role":"system","content":"A"}]}`},
		{"user last string", `{"messages":[{"role":"user","content":"q"}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"text","text":"U"}]}]}`},
		{"user last parts", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"U"}]}]}`},
		{"user after tool result", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[]},{"role":"tool","tool_call_id":"a","content":"r"}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[]},{"role":"tool","tool_call_id":"a","content":"r"},{"role":"user","content":"U"}]}`},
		{"several after tool result", `{"messages":[{"role":"tool","tool_call_id":"a","content":"r"}]}`,
			conv.RequestEdits{AppendUserText: []string{"U1", "U2"}},
			`{"messages":[{"role":"tool","tool_call_id":"a","content":"r"},{"role":"user","content":[{"type":"text","text":"U1"},{"type":"text","text":"U2"}]}]}`},
		{"max completion tokens", `{"max_completion_tokens":1,"max_tokens":2}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"max_completion_tokens":9,"max_tokens":2}`},
		{"max tokens legacy", `{"max_tokens":2}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"max_tokens":9}`},
		{"max tokens absent", `{"model":"m"}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"model":"m","max_completion_tokens":9}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := apitest.CheckEdit(t, apitest.CodecFor(Descriptor), []byte(tt.body), tt.edits)
			require.Equal(t, tt.want, string(out))
		})
	}
}

func TestChatParseReply(t *testing.T) {
	r, err := apitest.CodecFor(Descriptor).ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, &conv.Reply{
		Model: "gpt-4.1-2025-04-14", Text: "Reading it.",
		ToolCalls: []conv.ToolCall{
			{Index: 0, ID: "call_a", Name: "read_file", Args: []byte(`{"path":"main.go"}`)},
			{Index: 1, ID: "call_b", Name: "read_file", Args: []byte(`{"path":"go.mod"}`)},
		},
		Stop: conv.StopToolUse, RawStop: "tool_calls", Usage: conv.Usage{InputTokens: 50, OutputTokens: 12},
	}, r)
	for raw, want := range map[string]conv.StopReason{
		"stop": conv.StopEnd, "length": conv.StopMaxTokens, "tool_calls": conv.StopToolUse,
		"content_filter": conv.StopRefusal, "function_call": conv.StopToolUse, "weird": conv.StopOther,
	} {
		r, err := apitest.CodecFor(Descriptor).ParseReply([]byte(`{"choices":[{"index":0,"message":{"content":null},"finish_reason":"` + raw + `"}]}`))
		require.NoError(t, err)
		require.Equal(t, want, r.Stop)
		require.Equal(t, raw, r.RawStop)
	}
}

func TestChatStream(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	evs, reply := apitest.DecodeSSE(t, c, apitest.Fixture(t, Descriptor, "stream.sse"))
	require.Equal(t, []rewrite.EventKind{
		rewrite.StreamStart, rewrite.BlockDelta,
		rewrite.BlockDelta,
		rewrite.BlockStart,
		rewrite.BlockDelta,
		rewrite.BlockDelta, rewrite.BlockStart,
		rewrite.BlockDelta,
		rewrite.BlockStop, rewrite.BlockStop, rewrite.Finish,
		rewrite.Usage,
		rewrite.Done,
	}, apitest.Kinds(evs))
	require.Equal(t, "gpt-4.1-2025-04-14", evs[0].Model)
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStart, Seq: -1, Index: 1, BlockKind: conv.BlockToolCall,
		ToolCallID: "call_b", ToolName: "read_file", ArgsDelta: `{"path":`}, evs[6])
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.Finish, Seq: -1, Stop: conv.StopToolUse, RawStop: "tool_calls"}, evs[10])

	want, err := c.ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, want, reply)
}

func TestChatStreamVariants(t *testing.T) {
	d := apitest.CodecFor(Descriptor).NewStreamDecoder()
	decode := func(data string) []rewrite.StreamEvent {
		evs, err := d.Decode(rewrite.Event{Data: []byte(data)})
		require.NoError(t, err)
		return append([]rewrite.StreamEvent(nil), evs...)
	}
	require.Equal(t, []rewrite.EventKind{rewrite.StreamStart, rewrite.BlockDelta}, apitest.Kinds(decode(`{"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`)))
	// Usage on the finish chunk, and a usage chunk with choices null.
	evs := decode(`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`)
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Finish, Seq: -1, Stop: conv.StopMaxTokens, RawStop: "length", Usage: &conv.Usage{InputTokens: 3, OutputTokens: 4}}}, evs)
	require.Equal(t, []rewrite.EventKind{rewrite.Usage}, apitest.Kinds(decode(`{"choices":null,"usage":{"prompt_tokens":3}}`)))
	require.Equal(t, []rewrite.EventKind{rewrite.Usage}, apitest.Kinds(decode(`{"usage":{"prompt_tokens":3}}`)))
	require.Equal(t, []rewrite.EventKind{rewrite.Other}, apitest.Kinds(decode(`{"choices":[],"usage":null}`)))
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Error, Seq: -1, ErrorMessage: "boom"}}, decode(`{"error":{"message":"boom","type":"server_error"}}`))
	require.Equal(t, []rewrite.EventKind{rewrite.Done}, apitest.Kinds(decode(` [DONE] `)))
}
