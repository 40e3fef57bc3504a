package responses

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

func TestResponsesParseRequest(t *testing.T) {
	req, err := apitest.CodecFor(Descriptor).ParseRequest(apitest.Fixture(t, Descriptor, "request.json"))
	require.NoError(t, err)
	require.Len(t, req.Fingerprint, 32)
	req.Fingerprint = ""
	req.Messages = apitest.StripDigests(t, req.Messages)
	require.Equal(t, &conv.Request{SideKnown: true, // an agent turn: Side ""
		Model: "gpt-5-codex", Stream: true, MaxOutputTokens: 4096, HasMaxOutputTokens: true,
		System:             "You are Codex.\n\nsandbox: workspace-write",
		Tools:              []conv.ToolDef{{Name: "read_file"}},
		PromptCacheKey:     "0199c2a4-thread",
		PreviousResponseID: "resp_0",
		Messages: []conv.Message{
			{Role: conv.RoleSystem, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "sandbox: workspace-write"}}},
			{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "Show me main.go"}}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				{Kind: conv.BlockThinking, Text: "Need the file."},
				{Kind: conv.BlockToolCall, ToolCallID: "call_9", ToolName: "read_file", Args: []byte(`{"path":"main.go"}`)},
			}},
			{Role: conv.RoleTool, Blocks: []conv.Block{
				{Kind: conv.BlockToolResult, ToolCallID: "call_9", ToolName: "read_file", Text: "package main\n"},
			}},
		},
	}, req)
}

func TestResponsesParseRequestStringInput(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	req, err := c.ParseRequest([]byte(`{"model":"m","input":"hi"}`))
	require.NoError(t, err)
	require.Equal(t, []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "hi"}}}}, req.Messages)
	require.Empty(t, req.Fingerprint, "an opening request")
	// The same conversation as item lists, with and without item ids and
	// statuses: same fingerprint.
	req2, err := c.ParseRequest([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo"}]}]}`))
	require.NoError(t, err)
	req4, err := c.ParseRequest([]byte(`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"yo","annotations":[]}]},{"role":"user","content":"more"}]}`))
	require.NoError(t, err)
	require.NotEmpty(t, req2.Fingerprint)
	require.Equal(t, req2.Fingerprint, req4.Fingerprint)
	req3, err := c.ParseRequest([]byte(`{"input":[{"type":"web_search_call","id":"x"},{"type":"local_shell_call_output","id":"c"}]}`))
	require.NoError(t, err)
	req3.Messages = apitest.StripDigests(t, req3.Messages)
	require.Equal(t, []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{{Kind: conv.BlockOther}}},
		{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockOther}}},
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
		{`{"input":[{"type":"custom_tool_call","call_id":"a","name":"n","input":{}}]}`, "input[0].input must be a string"},
		{`{"input":[{"type":"custom_tool_call","call_id":1,"name":"n","input":""}]}`, "input[0].call_id must be a string"},
		{`{"input":[{"type":"custom_tool_call_output","call_id":"a","output":1}]}`, "input[0].output must be a string or an array"},
	}
	for _, tt := range tests {
		_, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(tt.body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, tt.body)
		require.EqualError(t, err, "rewrite: malformed request body: "+tt.field)
	}
}

func TestResponsesApplyEdits(t *testing.T) {
	tool := conv.ToolSpec{Name: "t", Description: "d", Parameters: []byte(`{"type":"object"}`)}
	tests := []struct {
		name  string
		body  string
		edits conv.RequestEdits
		want  string
	}{
		{"tools", `{"tools":[]}`, conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"tools":[{"type":"function","name":"t","description":"d","parameters":{"type":"object"},"strict":false}]}`},
		{"instructions", `{"instructions":"I"}`, conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"instructions":"I\n\nA"}`},
		{"instructions absent", `{"input":"q"}`, conv.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"input":"q","instructions":"A\n\nB"}`},
		{"string input", `{"input":"hi \u00e9"}`, conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi \u00e9"},{"type":"input_text","text":"U"}]}]}`},
		{"last user parts", `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_text","text":"U"}]}]}`},
		{"last user string", `{"input":[{"role":"user","content":"q"}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_text","text":"U"}]}]}`},
		{"after function output", `{"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c","output":"r"}]}`,
			conv.RequestEdits{AppendUserText: []string{"U1", "U2"}},
			`{"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c","output":"r"},{"role":"user","content":[{"type":"input_text","text":"U1"},{"type":"input_text","text":"U2"}]}]}`},
		{"input absent", `{"previous_response_id":"r"}`, conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"previous_response_id":"r","input":[{"role":"user","content":[{"type":"input_text","text":"U"}]}]}`},
		{"max", `{"max_output_tokens":5}`, conv.RequestEdits{SetMaxOutputTokens: 6}, `{"max_output_tokens":6}`},
		{"max absent", `{}`, conv.RequestEdits{SetMaxOutputTokens: 6}, `{"max_output_tokens":6}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := apitest.CheckEdit(t, apitest.CodecFor(Descriptor), []byte(tt.body), tt.edits)
			require.Equal(t, tt.want, string(out))
		})
	}
}

func TestResponsesParseReply(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	r, err := c.ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, &conv.Reply{
		Model: "gpt-5-codex", Text: "Reading it.",
		ToolCalls: []conv.ToolCall{{Index: 0, ID: "call_9", Name: "read_file", Args: []byte(`{"path":"main.go"}`)}},
		Stop:      conv.StopToolUse, RawStop: "completed", Usage: conv.Usage{InputTokens: 90, OutputTokens: 16},
	}, r)

	r, err = c.ParseReply([]byte(`{"id":"resp_1","object":"response","status":"incomplete",
	 "incomplete_details":{"reason":"max_output_tokens"},
	 "output":[{"type":"function_call","id":"fc_1","call_id":"call_9","name":"read_file","arguments":"{\"pa","status":"incomplete"}],
	 "usage":{"input_tokens":90,"output_tokens":16,"total_tokens":106}}`))
	require.NoError(t, err)
	require.Equal(t, conv.StopMaxTokens, r.Stop)
	require.Equal(t, "max_output_tokens", r.RawStop)
	require.Equal(t, `{"pa`, string(r.ToolCalls[0].Args))

	for body, want := range map[string]conv.StopReason{
		`{"status":"completed","output":[]}`:                                       conv.StopEnd,
		`{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`: conv.StopRefusal,
		`{"status":"failed","error":{"message":"x"}}`:                              conv.StopOther,
		`{"status":"in_progress"}`:                                                 conv.StopNone,
		`{"status":"incomplete"}`:                                                  conv.StopOther,
	} {
		r, err := c.ParseReply([]byte(body))
		require.NoError(t, err)
		require.Equal(t, want, r.Stop, body)
	}
}

func TestResponsesStream(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	evs, reply := apitest.DecodeSSE(t, c, apitest.Fixture(t, Descriptor, "stream.sse"))
	require.Equal(t, []rewrite.EventKind{
		rewrite.StreamStart, rewrite.Other,
		rewrite.BlockStart, rewrite.BlockDelta, rewrite.BlockStop,
		rewrite.BlockStart, rewrite.Other, rewrite.BlockDelta, rewrite.BlockDelta, rewrite.Other, rewrite.Other, rewrite.BlockStop,
		rewrite.BlockStart, rewrite.BlockDelta, rewrite.BlockDelta, rewrite.Other, rewrite.BlockStop,
		rewrite.Finish,
	}, apitest.Kinds(evs))
	for i, e := range evs {
		require.Equal(t, int64(i), e.Seq)
	}
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStart, Seq: 12, Index: 2, BlockKind: conv.BlockToolCall,
		ToolCallID: "call_9", ToolName: "read_file"}, evs[12])
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStop, Seq: 16, Index: 2, BlockKind: conv.BlockToolCall,
		ToolCallID: "call_9", ToolName: "read_file"}, evs[16], "streamed arguments are not repeated at the stop")
	require.Equal(t, conv.BlockThinking, evs[3].BlockKind)
	require.Equal(t, "Look at it.", evs[3].TextDelta)

	want, err := c.ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, want, reply)
}

func TestResponsesStreamVariants(t *testing.T) {
	d := apitest.CodecFor(Descriptor).NewStreamDecoder()
	decode := func(data string) []rewrite.StreamEvent {
		evs, err := d.Decode(rewrite.Event{Data: []byte(data)})
		require.NoError(t, err)
		return append([]rewrite.StreamEvent(nil), evs...)
	}
	// Arguments that only arrive in output_item.done are carried by the stop.
	decode(`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n","arguments":""}}`)
	evs := decode(`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}}`)
	require.Equal(t, "{}", evs[0].ArgsDelta)
	evs = decode(`{"type":"response.incomplete","sequence_number":9,"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":1,"output_tokens":2}}}`)
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Finish, Seq: 9, Stop: conv.StopMaxTokens, RawStop: "max_output_tokens",
		Usage: &conv.Usage{InputTokens: 1, OutputTokens: 2}}}, evs)
	evs = decode(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"bad"}}}`)
	require.Equal(t, rewrite.Finish, evs[0].Kind)
	require.Equal(t, "bad", evs[0].ErrorMessage)
	evs = decode(`{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":3}`)
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Error, Seq: 3, ErrorMessage: "slow down"}}, evs)
	require.Equal(t, []rewrite.EventKind{rewrite.Done}, apitest.Kinds(decode(`[DONE]`)))
	require.Equal(t, []rewrite.EventKind{rewrite.Other}, apitest.Kinds(decode(`{"type":"response.compaction.compacting","sequence_number":4}`)))
}

// respPatch is an apply_patch input with characters that need escaping.
const respPatch = "*** Begin Patch\n*** Update File: a.go\n@@\n-x := 1\n+x := \"<2>\" // é\n*** End Patch\n"

// respPatchArgs is the view's arguments object for respPatch.
const respPatchArgs = `{"input":"*** Begin Patch\n*** Update File: a.go\n@@\n-x := 1\n+x := \"<2>\" // é\n*** End Patch\n"}`

// respCustomConv is a Codex-style conversation with a custom apply_patch
// call next to a function call, and both outputs.
const respCustomConv = `{"model":"gpt-5-codex","tools":[` +
	`{"type":"function","name":"shell","parameters":{"type":"object"}},` +
	`{"type":"custom","name":"apply_patch","description":"Patch files.","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},` +
	`{"type":"web_search"}],"input":[` +
	`{"role":"user","content":"fix a.go"},` +
	`{"type":"reasoning","id":"rs","summary":[]},` +
	`{"type":"custom_tool_call","id":"ctc_1","status":"completed","call_id":"call_p","name":"apply_patch","input":"*** Begin Patch\n*** Update File: a.go\n@@\n-x := 1\n+x := \"<2>\" // é\n*** End Patch\n"},` +
	`{"type":"function_call","call_id":"call_s","name":"shell","arguments":"{\"cmd\":\"go test\"}"},` +
	`{"type":"custom_tool_call_output","call_id":"call_p","output":"Done!"},` +
	`{"type":"function_call_output","call_id":"call_s","output":[{"type":"input_text","text":"ok"}]}` +
	`]}`

func TestResponsesParseRequestCustom(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	req, err := c.ParseRequest([]byte(respCustomConv))
	require.NoError(t, err)
	req.Messages = apitest.StripDigests(t, req.Messages)
	require.Equal(t, []conv.ToolDef{{Name: "shell"}, {Name: "apply_patch"}}, req.Tools)
	require.True(t, req.HasTool("apply_patch"))
	require.Equal(t, []conv.Message{
		{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "fix a.go"}}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			{Kind: conv.BlockThinking},
			{Kind: conv.BlockToolCall, ToolCallID: "call_p", ToolName: "apply_patch", Args: []byte(respPatchArgs), Freeform: true},
			{Kind: conv.BlockToolCall, ToolCallID: "call_s", ToolName: "shell", Args: []byte(`{"cmd":"go test"}`)},
		}},
		{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "call_p", ToolName: "apply_patch", Text: "Done!", Freeform: true}}},
		{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "call_s", ToolName: "shell", Text: "ok"}}},
	}, req.Messages)
	require.Equal(t, respPatch, gjson.GetBytes(req.Messages[1].Blocks[1].Args, "input").Str)

	// The anchors do not depend on how the agent escaped the input or
	// spaced its items, and do depend on the input text.
	anchors := conv.Anchors(req.Messages)
	resent := strings.NewReplacer(`\"<2>\"`, `\"\u003c2\u003e\"`, `é`, `\u00e9`, `,"call_id":"call_p","name"`, `, "call_id" : "call_p", "name"`).Replace(respCustomConv)
	require.NotEqual(t, respCustomConv, resent)
	req2, err := c.ParseRequest([]byte(resent))
	require.NoError(t, err)
	require.Equal(t, req.Messages, apitest.StripDigests(t, req2.Messages))
	require.Equal(t, anchors, conv.Anchors(req2.Messages))
	req3, err := c.ParseRequest([]byte(strings.Replace(respCustomConv, "x := 1", "x := 3", 1)))
	require.NoError(t, err)
	req3.Messages = apitest.StripDigests(t, req3.Messages)
	a3 := conv.Anchors(req3.Messages)
	require.Equal(t, anchors[0], a3[0])
	require.NotEqual(t, anchors[1], a3[1])
}

// respReplyCustom is a reply with text, a custom call between two function
// calls, and a second custom call.
const respReplyCustom = `{"id":"resp_c","status":"completed","model":"gpt-5-codex","output":[
  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Patching."}]},
  {"type":"function_call","call_id":"t","name":"create_new_topic","arguments":"{\"title\":\"Fix\"}"},
  {"type":"custom_tool_call","id":"ctc_1","status":"completed","call_id":"p","name":"apply_patch","input":"*** Begin Patch\n*** Update File: a.go\n@@\n-x := 1\n+x := \"<2>\" // é\n*** End Patch\n"},
  {"type":"function_call","call_id":"s","name":"shell","arguments":"{}"},
  {"type":"custom_tool_call","id":"ctc_2","call_id":"q","name":"note","input":""}
 ],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`

func TestResponsesParseReplyCustom(t *testing.T) {
	r, err := apitest.CodecFor(Descriptor).ParseReply([]byte(respReplyCustom))
	require.NoError(t, err)
	require.Equal(t, &conv.Reply{
		Model: "gpt-5-codex", Text: "Patching.",
		ToolCalls: []conv.ToolCall{
			{Index: 0, ID: "t", Name: "create_new_topic", Args: []byte(`{"title":"Fix"}`)},
			{Index: 1, ID: "p", Name: "apply_patch", Args: []byte(respPatchArgs), Freeform: true},
			{Index: 2, ID: "s", Name: "shell", Args: []byte(`{}`)},
			{Index: 3, ID: "q", Name: "note", Args: []byte(`{"input":""}`), Freeform: true},
		},
		Stop: conv.StopToolUse, RawStop: "completed", Usage: conv.Usage{InputTokens: 10, OutputTokens: 5},
	}, r)

	// A reply whose only call is a custom one is a tool-use turn.
	r, err = apitest.CodecFor(Descriptor).ParseReply([]byte(`{"status":"completed","output":[{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"x"}]}`))
	require.NoError(t, err)
	require.Equal(t, conv.StopToolUse, r.Stop)
	require.Equal(t, []conv.ToolCall{{ID: "p", Name: "apply_patch", Args: []byte(`{"input":"x"}`), Freeform: true}}, r.ToolCalls)
}

// respWithoutFreeform returns calls with Freeform cleared: StreamEvent has
// no field for it, so the accumulator cannot report it.
func respWithoutFreeform(calls []conv.ToolCall) []conv.ToolCall {
	out := append([]conv.ToolCall(nil), calls...)
	for i := range out {
		out[i].Freeform = false
	}
	return out
}

func TestResponsesStreamCustom(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	sse := apitest.Fixture(t, Descriptor, "splice_custom.sse")
	evs, reply := apitest.DecodeSSE(t, c, sse)
	var last rewrite.Event
	rd := rewrite.NewReader(bytes.NewReader(sse))
	for ev, err := rd.Next(); err == nil; ev, err = rd.Next() {
		last = rewrite.Event{Data: bytes.Clone(ev.Data)}
	}
	want, err := c.ParseReply([]byte(gjson.GetBytes(last.Data, "response").Raw))
	require.NoError(t, err)
	require.Len(t, want.ToolCalls, 2)
	require.True(t, want.ToolCalls[0].Freeform)
	require.Equal(t, respPatchArgs, string(want.ToolCalls[0].Args))
	require.Equal(t, respWithoutFreeform(want.ToolCalls), reply.ToolCalls)
	require.Equal(t, want.Text, reply.Text)
	require.Equal(t, want.Stop, reply.Stop)
	require.Equal(t, want.Usage, reply.Usage)
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStart, Seq: 8, Index: 1, BlockKind: conv.BlockToolCall,
		ToolCallID: "call_p", ToolName: "apply_patch", ArgsDelta: `{"input":"`}, evs[8])
	require.Equal(t, rewrite.BlockDelta, evs[9].Kind)
	require.Equal(t, `*** Begin Patch\n*** Update File: a.go\n@@\n`, evs[9].ArgsDelta)
	require.Equal(t, rewrite.Other, evs[11].Kind, "custom_tool_call_input.done")
	require.Equal(t, `"}`, evs[12].ArgsDelta, "streamed input is not repeated at the stop")

	// Variants: input only in the done item, in the added item, or deltas
	// without an added item; each gives ParseReply's arguments.
	item := func(input string) string {
		return `{"type":"custom_tool_call","id":"ctc","call_id":"c","name":"n","input":` + string(jsonkit.Quote(input)) + `}`
	}
	for name, events := range map[string][]string{
		"done only": {
			`{"type":"response.output_item.added","output_index":0,"item":` + item("") + `}`,
			`{"type":"response.output_item.done","output_index":0,"item":` + item("a\"b") + `}`,
		},
		"added whole": {
			`{"type":"response.output_item.added","output_index":0,"item":` + item("a\"b") + `}`,
			`{"type":"response.output_item.done","output_index":0,"item":` + item("a\"b") + `}`,
		},
		"deltas only": {
			`{"type":"response.custom_tool_call_input.delta","item_id":"ctc","output_index":0,"delta":"a\""}`,
			`{"type":"response.custom_tool_call_input.delta","item_id":"ctc","output_index":0,"delta":"b"}`,
			`{"type":"response.output_item.done","output_index":0,"item":` + item("a\"b") + `}`,
		},
		"stop only": {
			`{"type":"response.output_item.done","output_index":0,"item":` + item("a\"b") + `}`,
		},
	} {
		d := c.NewStreamDecoder()
		var acc rewrite.StreamAccumulator
		for _, data := range events {
			out, err := d.Decode(rewrite.Event{Data: []byte(data)})
			require.NoError(t, err, name)
			acc.Add(out...)
		}
		calls := acc.Reply().ToolCalls
		require.Len(t, calls, 1, name)
		require.Equal(t, `{"input":"a\"b"}`, string(calls[0].Args), name)
	}
}
