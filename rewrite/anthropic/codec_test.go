package anthropic

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestAnthropicParseRequest(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	req, err := c.ParseRequest(apitest.Fixture(t, Descriptor, "request.json"))
	require.NoError(t, err)
	require.Len(t, req.Fingerprint, 32)
	fp := req.Fingerprint
	req.Fingerprint = ""
	req.Messages = apitest.StripDigests(t, req.Messages)
	require.Equal(t, &conv.Request{SideKnown: true, // an agent turn: Side ""
		Model: "claude-sonnet-4-5", Stream: true, MaxOutputTokens: 2048, HasMaxOutputTokens: true,
		System:         "You are terse.",
		Tools:          []conv.ToolDef{{Name: "read_file"}, {Name: "web_search"}},
		MetadataUserID: "user_abc_account_def_session_1b2c",
		Messages: []conv.Message{
			{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "Show me main.go"}}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				{Kind: conv.BlockThinking, Text: "Need the file."},
				{Kind: conv.BlockThinking},
				{Kind: conv.BlockText, Text: "Reading it."},
				{Kind: conv.BlockToolCall, ToolCallID: "toolu_01X", ToolName: "read_file", Args: []byte(`{"path": "main.go"}`)},
			}},
			{Role: conv.RoleUser, Blocks: []conv.Block{
				{Kind: conv.BlockToolResult, ToolCallID: "toolu_01X", ToolName: "read_file", Text: "package main"},
				{Kind: conv.BlockOther},
			}},
		},
	}, req)

	// The fingerprint covers the conversation up to the first model turn. It
	// survives the conversation growing, the first turn's cache breakpoint
	// moving and the client re-serialising the model turn (thinking
	// dropped, input re-formatted).
	later := []byte(`{"model":"claude-sonnet-4-5","max_tokens":10,"system":[{"type":"text","text":"You are terse."}],
	  "messages":[{"role":"user","content":[{"type":"text","text":"Show me main.go","cache_control":{"type":"ephemeral"}}]},
	  {"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_01X","name":"read_file","input":{"path":"main.go"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01X","content":"package main"}]},
	  {"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`)
	req2, err := c.ParseRequest(later)
	require.NoError(t, err)
	require.Equal(t, fp, req2.Fingerprint)
	opening, err := c.ParseRequest([]byte(`{"system":"You are terse.","messages":[{"role":"user","content":"Show me main.go"}]}`))
	require.NoError(t, err)
	require.Empty(t, opening.Fingerprint, "an opening request has no fingerprint: the model's first reply tells runs apart")
	require.True(t, opening.Opening())
	other, err := c.ParseRequest([]byte(`{"system":"You are terse.","messages":[{"role":"user","content":"Show me main.go"},{"role":"assistant","content":"Reading."}]}`))
	require.NoError(t, err)
	require.NotEmpty(t, other.Fingerprint)
	require.NotEqual(t, fp, other.Fingerprint)
}

func TestAnthropicParseRequestMinimal(t *testing.T) {
	req, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"system":null,"stream":null}`))
	require.NoError(t, err)
	require.False(t, req.Stream)
	require.False(t, req.HasMaxOutputTokens)
	require.Empty(t, req.System)
	require.Nil(t, req.Tools)
}

func TestAnthropicMalformed(t *testing.T) {
	tests := []struct{ body, field string }{
		{`{"messages":{}}`, "messages must be an array"},
		{`{"max_tokens":"10"}`, "max_tokens must be a number"},
		{`{"stream":"yes"}`, "stream must be a boolean"},
		{`{"model":1}`, "model must be a string"},
		{`{"system":5}`, "system must be a string or an array"},
		{`{"system":[1]}`, "system[0] must be an object"},
		{`{"system":[{"type":"text","text":1}]}`, "system[0].text must be a string"},
		{`{"tools":{}}`, "tools must be an array"},
		{`{"tools":[{"name":3}]}`, "tools[0].name must be a string"},
		{`{"metadata":[]}`, "metadata must be an object"},
		{`{"metadata":{"user_id":1}}`, "metadata.user_id must be a string"},
		{`{"messages":[1]}`, "messages[0] must be an object"},
		{`{"messages":[{"role":"user","content":1}]}`, "messages[0].content must be a string or an array"},
		{`{"messages":[{"role":2,"content":"x"}]}`, "messages[0].role must be a string"},
		{`{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":{}}]}]}`, "messages[1].content[0].text must be a string"},
		{`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":7}]}]}`, "messages[0].content[0].content must be a string or an array"},
		{`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":5}]}]}`, "messages[0].content[0].id must be a string"},
	}
	for _, tt := range tests {
		_, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(tt.body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, tt.body)
		require.EqualError(t, err, "rewrite: malformed request body: "+tt.field)
	}
}

func TestAnthropicApplyEdits(t *testing.T) {
	tool := conv.ToolSpec{Name: "t", Description: "d", Parameters: []byte(`{"type":"object"}`)}
	tests := []struct {
		name  string
		body  string
		edits conv.RequestEdits
		want  string
	}{
		{"tools append", `{"model":"m", "tools": [ {"name":"a","input_schema":{}} ], "messages":[]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"model":"m", "tools": [ {"name":"a","input_schema":{}},{"name":"t","description":"d","input_schema":{"type":"object"}} ], "messages":[]}`},
		{"tools empty", `{"tools":[ ],"messages":[]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{{Name: "x"}}},
			`{"tools":[{"name":"x","input_schema":{"type":"object","properties":{}}} ],"messages":[]}`},
		{"tools absent", "{\n  \"model\": \"m\",\n  \"messages\": []\n}\n",
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool, {Name: "u", Parameters: []byte(`{}`)}}},
			"{\n  \"model\": \"m\",\n  \"messages\": [],\"tools\":[{\"name\":\"t\",\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}},{\"name\":\"u\",\"input_schema\":{}}]\n}\n"},
		{"tools null", `{"tools":null}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{{Name: "x", Parameters: []byte(`{}`)}}},
			`{"tools":[{"name":"x","input_schema":{}}]}`},
		{"system string", `{"system":"Be terse.","messages":[]}`,
			conv.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"system":"Be terse.\n\nA\n\nB","messages":[]}`},
		{"system string escapes kept", `{"system":"a\u00e9\"b\/"}`,
			conv.RequestEdits{AppendSystem: []string{"x\ty"}},
			`{"system":"a\u00e9\"b\/\n\nx\ty"}`},
		{"system empty string", `{"system":""}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"system":"A"}`},
		{"system blocks", `{"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}]}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}},{"type":"text","text":"A"}]}`},
		{"system absent", `{"messages":[]}`,
			conv.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"messages":[],"system":"A\n\nB"}`},
		{"user string content", `{"messages":[{"role":"user","content":"hi \"there\""}]}`,
			conv.RequestEdits{AppendUserText: []string{"R1", "R2"}},
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi \"there\""},{"type":"text","text":"R1"},{"type":"text","text":"R2"}]}]}`},
		{"user after tool results", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r","cache_control":{"type":"ephemeral"}}]}]}`,
			conv.RequestEdits{AppendUserText: []string{"R"}},
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r","cache_control":{"type":"ephemeral"}},{"type":"text","text":"R"}]}]}`},
		{"user before prefill", `{"messages":[{"role":"user","content":[]},{"role":"assistant","content":"{"}]}`,
			conv.RequestEdits{AppendUserText: []string{"R"}},
			`{"messages":[{"role":"user","content":[{"type":"text","text":"R"}]},{"role":"assistant","content":"{"}]}`},
		{"user content missing", `{"messages":[{"role":"user"}]}`,
			conv.RequestEdits{AppendUserText: []string{"R"}},
			`{"messages":[{"role":"user","content":[{"type":"text","text":"R"}]}]}`},
		{"no user message", `{"messages":[{"role":"assistant","content":"x"}]}`,
			conv.RequestEdits{AppendUserText: []string{"R"}},
			`{"messages":[{"role":"assistant","content":"x"}]}`},
		{"max tokens replace", `{"max_tokens": 1024, "messages":[]}`,
			conv.RequestEdits{SetMaxOutputTokens: 8192},
			`{"max_tokens": 8192, "messages":[]}`},
		{"max tokens add", `{"messages":[]}`,
			conv.RequestEdits{SetMaxOutputTokens: 8192},
			`{"messages":[],"max_tokens":8192}`},
		{"all in order", `{"max_tokens":1,"system":"S","tools":[],"messages":[{"role":"user","content":"q"}]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{{Name: "x", Parameters: []byte(`{}`)}}, AppendSystem: []string{"A"},
				AppendUserText: []string{"U"}, SetMaxOutputTokens: 2},
			`{"max_tokens":2,"system":"S\n\nA","tools":[{"name":"x","input_schema":{}}],"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"text","text":"U"}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := apitest.CheckEdit(t, apitest.CodecFor(Descriptor), []byte(tt.body), tt.edits)
			require.Equal(t, tt.want, string(out))
		})
	}
}

func TestAnthropicApplyEditsErrors(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	_, err := c.ApplyEdits([]byte(`{}`), conv.RequestEdits{AddTools: []conv.ToolSpec{{Name: "x", Parameters: []byte(`[`)}}})
	require.Error(t, err)
	_, err = c.ApplyEdits([]byte(`{"tools":{}}`), conv.RequestEdits{AddTools: []conv.ToolSpec{{Name: "x"}}})
	require.Error(t, err)
	_, err = c.ApplyEdits([]byte(`{"system":3}`), conv.RequestEdits{AppendSystem: []string{"x"}})
	require.Error(t, err)
}

func TestAnthropicParseReply(t *testing.T) {
	r, err := apitest.CodecFor(Descriptor).ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, &conv.Reply{
		Model: "claude-sonnet-4-5", Text: "Reading it.",
		ToolCalls: []conv.ToolCall{
			{Index: 0, ID: "toolu_01X", Name: "read_file", Args: []byte(`{"path": "main.go"}`)},
			{Index: 1, ID: "toolu_01Y", Name: "list_dir", Args: []byte(`{}`)},
		},
		Stop: conv.StopToolUse, RawStop: "tool_use",
		Usage: conv.Usage{InputTokens: 812, OutputTokens: 57, CacheReadTokens: 2048, CacheWriteTokens: 100},
	}, r)
}

func TestAnthropicStopReasons(t *testing.T) {
	for raw, want := range map[string]conv.StopReason{
		"end_turn": conv.StopEnd, "max_tokens": conv.StopMaxTokens, "stop_sequence": conv.StopSequence,
		"tool_use": conv.StopToolUse, "pause_turn": conv.StopPause, "refusal": conv.StopRefusal,
		"model_context_window_exceeded": conv.StopContextWindow, "new_reason": conv.StopOther,
	} {
		r, err := apitest.CodecFor(Descriptor).ParseReply([]byte(`{"content":[],"stop_reason":"` + raw + `"}`))
		require.NoError(t, err)
		require.Equal(t, want, r.Stop)
		require.Equal(t, raw, r.RawStop)
	}
}

func TestAnthropicStream(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	evs, reply := apitest.DecodeSSE(t, c, apitest.Fixture(t, Descriptor, "stream.sse"))
	require.Equal(t, []rewrite.EventKind{
		rewrite.StreamStart,
		rewrite.BlockStart, rewrite.BlockDelta, rewrite.BlockDelta, rewrite.BlockStop,
		rewrite.Ping,
		rewrite.BlockStart, rewrite.BlockDelta, rewrite.BlockDelta, rewrite.BlockStop,
		rewrite.BlockStart, rewrite.BlockDelta, rewrite.BlockDelta, rewrite.BlockDelta, rewrite.BlockStop,
		rewrite.BlockStart, rewrite.BlockStop,
		rewrite.Other, rewrite.Finish, rewrite.Done,
	}, apitest.Kinds(evs))
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStart, Index: 2, Seq: -1, BlockKind: conv.BlockToolCall,
		ToolCallID: "toolu_01X", ToolName: "read_file"}, evs[10])
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockDelta, Index: 2, Seq: -1, BlockKind: conv.BlockToolCall,
		ArgsDelta: `{"path": "ma`}, evs[12])
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockDelta, Index: 1, Seq: -1, BlockKind: conv.BlockText, TextDelta: " it."}, evs[8])
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStop, Index: 3, Seq: -1, BlockKind: conv.BlockToolCall, ArgsDelta: "{}"}, evs[16])
	require.Equal(t, conv.StopToolUse, evs[18].Stop)
	require.Equal(t, &conv.Usage{OutputTokens: 57}, evs[18].Usage)

	want, err := c.ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, want, reply)
}

func TestAnthropicStreamError(t *testing.T) {
	d := apitest.CodecFor(Descriptor).NewStreamDecoder()
	evs, err := d.Decode(rewrite.Event{Name: []byte("error"), Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)})
	require.NoError(t, err)
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Error, Seq: -1, ErrorMessage: "Overloaded"}}, evs)
	evs, err = d.Decode(rewrite.Event{Raw: []byte(": c\n\n")})
	require.NoError(t, err)
	require.Empty(t, evs)
	// A message_delta without a stop reason is usage only.
	evs, err = d.Decode(rewrite.Event{Data: []byte(`{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}`)})
	require.NoError(t, err)
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Usage, Seq: -1, Usage: &conv.Usage{OutputTokens: 3}}}, evs)
}
