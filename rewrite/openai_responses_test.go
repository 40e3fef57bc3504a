package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"shepherd/hooks"
)

func TestResponsesParseRequest(t *testing.T) {
	req, err := For(APIOpenAIResponses).ParseRequest(fixture(t, APIOpenAIResponses, "request.json"))
	require.NoError(t, err)
	require.Len(t, req.Fingerprint, 32)
	req.Fingerprint = ""
	require.Equal(t, &hooks.Request{
		Model: "gpt-5-codex", Stream: true, MaxOutputTokens: 4096, HasMaxOutputTokens: true,
		System:             "You are Codex.\n\nsandbox: workspace-write",
		Tools:              []hooks.ToolDef{{Name: "read_file"}},
		PromptCacheKey:     "0199c2a4-thread",
		PreviousResponseID: "resp_0",
		Messages: []hooks.Message{
			{Role: hooks.RoleSystem, Blocks: []hooks.Block{{Kind: hooks.BlockText, Text: "sandbox: workspace-write"}}},
			{Role: hooks.RoleUser, Blocks: []hooks.Block{{Kind: hooks.BlockText, Text: "Show me main.go"}}},
			{Role: hooks.RoleAssistant, Blocks: []hooks.Block{
				{Kind: hooks.BlockThinking, Text: "Need the file."},
				{Kind: hooks.BlockToolCall, ToolCallID: "call_9", ToolName: "read_file", Args: []byte(`{"path":"main.go"}`)},
			}},
			{Role: hooks.RoleTool, Blocks: []hooks.Block{
				{Kind: hooks.BlockToolResult, ToolCallID: "call_9", ToolName: "read_file", Text: "package main\n"},
			}},
		},
	}, req)
}

func TestResponsesParseRequestStringInput(t *testing.T) {
	c := For(APIOpenAIResponses)
	req, err := c.ParseRequest([]byte(`{"model":"m","input":"hi"}`))
	require.NoError(t, err)
	require.Equal(t, []hooks.Message{{Role: hooks.RoleUser, Blocks: []hooks.Block{{Kind: hooks.BlockText, Text: "hi"}}}}, req.Messages)
	// Same conversation start as an item list: same fingerprint.
	req2, err := c.ParseRequest([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo"}]}]}`))
	require.NoError(t, err)
	require.Equal(t, req.Fingerprint, req2.Fingerprint)
	req3, err := c.ParseRequest([]byte(`{"input":[{"type":"web_search_call","id":"x"},{"type":"custom_tool_call_output","call_id":"c"}]}`))
	require.NoError(t, err)
	require.Equal(t, []hooks.Message{
		{Role: hooks.RoleAssistant, Blocks: []hooks.Block{{Kind: hooks.BlockOther}}},
		{Role: hooks.RoleTool, Blocks: []hooks.Block{{Kind: hooks.BlockOther}}},
	}, req3.Messages)
}

func TestResponsesMalformed(t *testing.T) {
	tests := []struct{ body, field string }{
		{`{"input":5}`, "input must be a string or an array"},
		{`{"input":[5]}`, "input[0] must be an object"},
		{`{"instructions":[]}`, "instructions must be a string"},
		{`{"max_output_tokens":"9"}`, "max_output_tokens must be a number"},
		{`{"previous_response_id":1}`, "previous_response_id must be a string"},
		{`{"input":[{"role":"user","content":3}]}`, "input[0].content must be a string or an array"},
		{`{"input":[{"type":"function_call","call_id":"a","name":"n","arguments":{}}]}`, "input[0].arguments must be a string"},
		{`{"input":[{"type":"function_call_output","call_id":"a","output":1}]}`, "input[0].output must be a string or an array"},
		{`{"input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`, "input[0].content[0].text must be a string"},
	}
	for _, tt := range tests {
		_, err := For(APIOpenAIResponses).ParseRequest([]byte(tt.body))
		require.ErrorIs(t, err, ErrMalformed, tt.body)
		require.EqualError(t, err, "rewrite: malformed request body: "+tt.field)
	}
}

func TestResponsesApplyEdits(t *testing.T) {
	tool := hooks.ToolSpec{Name: "t", Description: "d", Parameters: []byte(`{"type":"object"}`)}
	tests := []struct {
		name  string
		body  string
		edits hooks.RequestEdits
		want  string
	}{
		{"tools", `{"tools":[]}`, hooks.RequestEdits{AddTools: []hooks.ToolSpec{tool}},
			`{"tools":[{"type":"function","name":"t","description":"d","parameters":{"type":"object"},"strict":false}]}`},
		{"instructions", `{"instructions":"I"}`, hooks.RequestEdits{AppendSystem: []string{"A"}},
			`{"instructions":"I\n\nA"}`},
		{"instructions absent", `{"input":"q"}`, hooks.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"input":"q","instructions":"A\n\nB"}`},
		{"string input", `{"input":"hi \u00e9"}`, hooks.RequestEdits{AppendUserText: []string{"U"}},
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi \u00e9"},{"type":"input_text","text":"U"}]}]}`},
		{"last user parts", `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}]}`,
			hooks.RequestEdits{AppendUserText: []string{"U"}},
			`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_text","text":"U"}]}]}`},
		{"last user string", `{"input":[{"role":"user","content":"q"}]}`,
			hooks.RequestEdits{AppendUserText: []string{"U"}},
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_text","text":"U"}]}]}`},
		{"after function output", `{"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c","output":"r"}]}`,
			hooks.RequestEdits{AppendUserText: []string{"U1", "U2"}},
			`{"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c","output":"r"},{"role":"user","content":[{"type":"input_text","text":"U1"},{"type":"input_text","text":"U2"}]}]}`},
		{"input absent", `{"previous_response_id":"r"}`, hooks.RequestEdits{AppendUserText: []string{"U"}},
			`{"previous_response_id":"r","input":[{"role":"user","content":[{"type":"input_text","text":"U"}]}]}`},
		{"max", `{"max_output_tokens":5}`, hooks.RequestEdits{SetMaxOutputTokens: 6}, `{"max_output_tokens":6}`},
		{"max absent", `{}`, hooks.RequestEdits{SetMaxOutputTokens: 6}, `{"max_output_tokens":6}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := checkEdit(t, For(APIOpenAIResponses), []byte(tt.body), tt.edits)
			require.Equal(t, tt.want, string(out))
		})
	}
}

func TestResponsesParseReply(t *testing.T) {
	c := For(APIOpenAIResponses)
	r, err := c.ParseReply(fixture(t, APIOpenAIResponses, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, &hooks.Reply{
		Model: "gpt-5-codex", Text: "Reading it.",
		ToolCalls: []hooks.ToolCall{{Index: 0, ID: "call_9", Name: "read_file", Args: []byte(`{"path":"main.go"}`)}},
		Stop:      hooks.StopToolUse, RawStop: "completed", Usage: hooks.Usage{InputTokens: 90, OutputTokens: 16},
	}, r)

	r, err = c.ParseReply([]byte(`{"id":"resp_1","object":"response","status":"incomplete",
	 "incomplete_details":{"reason":"max_output_tokens"},
	 "output":[{"type":"function_call","id":"fc_1","call_id":"call_9","name":"read_file","arguments":"{\"pa","status":"incomplete"}],
	 "usage":{"input_tokens":90,"output_tokens":16,"total_tokens":106}}`))
	require.NoError(t, err)
	require.Equal(t, hooks.StopMaxTokens, r.Stop)
	require.Equal(t, "max_output_tokens", r.RawStop)
	require.Equal(t, `{"pa`, string(r.ToolCalls[0].Args))

	for body, want := range map[string]hooks.StopReason{
		`{"status":"completed","output":[]}`:                                       hooks.StopEnd,
		`{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`: hooks.StopRefusal,
		`{"status":"failed","error":{"message":"x"}}`:                              hooks.StopOther,
		`{"status":"in_progress"}`:                                                 hooks.StopNone,
		`{"status":"incomplete"}`:                                                  hooks.StopOther,
	} {
		r, err := c.ParseReply([]byte(body))
		require.NoError(t, err)
		require.Equal(t, want, r.Stop, body)
	}
}

func TestResponsesStream(t *testing.T) {
	c := For(APIOpenAIResponses)
	evs, reply := decodeSSE(t, c, fixture(t, APIOpenAIResponses, "stream.sse"))
	require.Equal(t, []EventKind{
		StreamStart, Other,
		BlockStart, BlockDelta, BlockStop,
		BlockStart, Other, BlockDelta, BlockDelta, Other, Other, BlockStop,
		BlockStart, BlockDelta, BlockDelta, Other, BlockStop,
		Finish,
	}, kinds(evs))
	for i, e := range evs {
		require.Equal(t, int64(i), e.Seq)
	}
	require.Equal(t, StreamEvent{Kind: BlockStart, Seq: 12, Index: 2, BlockKind: hooks.BlockToolCall,
		ToolCallID: "call_9", ToolName: "read_file"}, evs[12])
	require.Equal(t, StreamEvent{Kind: BlockStop, Seq: 16, Index: 2, BlockKind: hooks.BlockToolCall,
		ToolCallID: "call_9", ToolName: "read_file"}, evs[16], "streamed arguments are not repeated at the stop")
	require.Equal(t, hooks.BlockThinking, evs[3].BlockKind)
	require.Equal(t, "Look at it.", evs[3].TextDelta)

	want, err := c.ParseReply(fixture(t, APIOpenAIResponses, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, want, reply)
}

func TestResponsesStreamVariants(t *testing.T) {
	d := For(APIOpenAIResponses).NewStreamDecoder()
	decode := func(data string) []StreamEvent {
		evs, err := d.Decode(Event{Data: []byte(data), hasData: true})
		require.NoError(t, err)
		return append([]StreamEvent(nil), evs...)
	}
	// Arguments that only arrive in output_item.done are carried by the stop.
	decode(`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n","arguments":""}}`)
	evs := decode(`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}}`)
	require.Equal(t, "{}", evs[0].ArgsDelta)
	evs = decode(`{"type":"response.incomplete","sequence_number":9,"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":1,"output_tokens":2}}}`)
	require.Equal(t, []StreamEvent{{Kind: Finish, Seq: 9, Stop: hooks.StopMaxTokens, RawStop: "max_output_tokens",
		Usage: &hooks.Usage{InputTokens: 1, OutputTokens: 2}}}, evs)
	evs = decode(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"bad"}}}`)
	require.Equal(t, Finish, evs[0].Kind)
	require.Equal(t, "bad", evs[0].ErrorMessage)
	evs = decode(`{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":3}`)
	require.Equal(t, []StreamEvent{{Kind: Error, Seq: 3, ErrorMessage: "slow down"}}, evs)
	require.Equal(t, []EventKind{Done}, kinds(decode(`[DONE]`)))
	require.Equal(t, []EventKind{Other}, kinds(decode(`{"type":"response.compaction.compacting","sequence_number":4}`)))
}
