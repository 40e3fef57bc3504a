package gemini

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestGeminiParseRequest(t *testing.T) {
	req, err := apitest.CodecFor(Descriptor).ParseRequest(apitest.Fixture(t, Descriptor, "request.json"))
	require.NoError(t, err)
	require.Len(t, req.Fingerprint, 32)
	req.Fingerprint = ""
	req.Messages = apitest.StripDigests(t, req.Messages)
	require.Equal(t, &conv.Request{SideKnown: true, // an agent turn: Side ""
		MaxOutputTokens: 1024, HasMaxOutputTokens: true,
		System: "Be terse.\n\nUse Go.",
		Tools:  []conv.ToolDef{{Name: "get_weather"}},
		Messages: []conv.Message{
			{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "Weather in Paris?"}}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				{Kind: conv.BlockThinking, Text: "Let me check."},
				{Kind: conv.BlockToolCall, ToolName: "get_weather", Args: []byte(`{"city": "Paris"}`)},
			}},
			{Role: conv.RoleUser, Blocks: []conv.Block{
				{Kind: conv.BlockToolResult, ToolName: "get_weather", Text: `{"temp_c": 18}`},
			}},
		},
	}, req)
}

func TestGeminiParseRequestSnakeCase(t *testing.T) {
	req, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(`{"system_instruction":{"parts":[{"text":"S"}]},
	  "contents":[{"parts":[{"text":"q"},{"inline_data":{"mime_type":"image/png","data":"AA=="}}]},
	    {"role":"model","parts":[{"function_call":{"id":"c1","name":"f","args":{}}}]},
	    {"role":"user","parts":[{"function_response":{"id":"c1","name":"f","response":{"ok":true}}}]}],
	  "tools":[{"function_declarations":[{"name":"f"}]}],
	  "generation_config":{"max_output_tokens":77}}`))
	require.NoError(t, err)
	require.Equal(t, "S", req.System)
	require.Equal(t, int64(77), req.MaxOutputTokens)
	require.Equal(t, []conv.ToolDef{{Name: "f"}}, req.Tools)
	require.Equal(t, []conv.Block{{Kind: conv.BlockText, Text: "q"}, {Kind: conv.BlockOther}}, req.Messages[0].Blocks)
	require.Equal(t, conv.Block{Kind: conv.BlockToolCall, ToolCallID: "c1", ToolName: "f", Args: []byte(`{}`)}, req.Messages[1].Blocks[0])
	require.Equal(t, conv.Block{Kind: conv.BlockToolResult, ToolCallID: "c1", ToolName: "f", Text: `{"ok":true}`}, req.Messages[2].Blocks[0])
}

func TestGeminiMalformed(t *testing.T) {
	tests := []struct{ body, field string }{
		{`{"contents":{}}`, "contents must be an array"},
		{`{"contents":[1]}`, "contents[0] must be an object"},
		{`{"contents":[{"role":"user","parts":"x"}]}`, "contents[0].parts must be an array"},
		{`{"contents":[{"role":"user","parts":[{"text":1}]}]}`, "contents[0].parts[0].text must be a string"},
		{`{"contents":[{"role":"user","parts":[{"functionCall":1}]}]}`, "contents[0].parts[0].functionCall must be an object"},
		{`{"systemInstruction":"be terse"}`, "systemInstruction must be an object"},
		{`{"systemInstruction":{"parts":{}}}`, "systemInstruction.parts must be an array"},
		{`{"generationConfig":{"maxOutputTokens":"9"}}`, "generationConfig.maxOutputTokens must be a number"},
		{`{"generationConfig":[]}`, "generationConfig must be an object"},
		{`{"tools":[{"functionDeclarations":{}}]}`, "tools[0].functionDeclarations must be an array"},
	}
	for _, tt := range tests {
		_, err := apitest.CodecFor(Descriptor).ParseRequest([]byte(tt.body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, tt.body)
		require.EqualError(t, err, "rewrite: malformed request body: "+tt.field)
	}
}

func TestGeminiApplyEdits(t *testing.T) {
	tool := conv.ToolSpec{Name: "t", Description: "d", Parameters: []byte(`{"type":"object"}`)}
	decl := `{"name":"t","description":"d","parameters":{"type":"object"}}`
	tests := []struct {
		name  string
		body  string
		edits conv.RequestEdits
		want  string
	}{
		{"tools into declarations", `{"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"a"}]}]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"a"},` + decl + `]}]}`},
		{"tools snake declarations", `{"tools":[{"function_declarations":[]}]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"tools":[{"function_declarations":[` + decl + `]}]}`},
		{"tools without declarations", `{"tools":[{"googleSearch":{}}]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"tools":[{"googleSearch":{}},{"functionDeclarations":[` + decl + `]}]}`},
		{"tools absent", `{"contents":[]}`,
			conv.RequestEdits{AddTools: []conv.ToolSpec{tool}},
			`{"contents":[],"tools":[{"functionDeclarations":[` + decl + `]}]}`},
		{"system parts", `{"systemInstruction":{"parts":[{"text":"S"}]}}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"systemInstruction":{"parts":[{"text":"S"},{"text":"A"}]}}`},
		{"system snake", `{"system_instruction":{"parts":[]}}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"system_instruction":{"parts":[{"text":"A"}]}}`},
		{"system without parts", `{"systemInstruction":{"role":"system"}}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"systemInstruction":{"role":"system","parts":[{"text":"A"}]}}`},
		{"system absent", `{"contents":[]}`,
			conv.RequestEdits{AppendSystem: []string{"A", "B"}},
			`{"contents":[],"systemInstruction":{"parts":[{"text":"A"},{"text":"B"}]}}`},
		{"system snake null", `{"system_instruction":null}`,
			conv.RequestEdits{AppendSystem: []string{"A"}},
			`{"system_instruction":{"parts":[{"text":"A"}]}}`},
		{"user", `{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"a"}]}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"contents":[{"role":"user","parts":[{"text":"q"},{"text":"U"}]},{"role":"model","parts":[{"text":"a"}]}]}`},
		{"user without role after function response", `{"contents":[{"parts":[{"text":"q"}]},{"role":"model","parts":[]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"contents":[{"parts":[{"text":"q"}]},{"role":"model","parts":[]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}},{"text":"U"}]}]}`},
		{"no user", `{"contents":[{"role":"model","parts":[]}]}`,
			conv.RequestEdits{AppendUserText: []string{"U"}},
			`{"contents":[{"role":"model","parts":[]}]}`},
		{"max replace", `{"generationConfig":{"temperature":0.2,"maxOutputTokens":1024}}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"generationConfig":{"temperature":0.2,"maxOutputTokens":9}}`},
		{"max add", `{"generationConfig":{"temperature":0.2}}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"generationConfig":{"temperature":0.2,"maxOutputTokens":9}}`},
		{"max snake", `{"generation_config":{"max_output_tokens":1}}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"generation_config":{"max_output_tokens":9}}`},
		{"max no config", `{"contents":[]}`,
			conv.RequestEdits{SetMaxOutputTokens: 9},
			`{"contents":[],"generationConfig":{"maxOutputTokens":9}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := apitest.CheckEdit(t, apitest.CodecFor(Descriptor), []byte(tt.body), tt.edits)
			require.Equal(t, tt.want, string(out))
		})
	}
}

func TestGeminiParseReply(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	r, err := c.ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, &conv.Reply{
		Model: "gemini-2.5-pro", Text: "Reading it.",
		ToolCalls: []conv.ToolCall{{Index: 0, Name: "read_file", Args: []byte(`{"path": "main.go"}`)}},
		Stop:      conv.StopToolUse, RawStop: "STOP", Usage: conv.Usage{InputTokens: 90, OutputTokens: 42},
	}, r)
	for raw, want := range map[string]conv.StopReason{
		"STOP": conv.StopEnd, "MAX_TOKENS": conv.StopMaxTokens, "SAFETY": conv.StopRefusal,
		"RECITATION": conv.StopRefusal, "MALFORMED_FUNCTION_CALL": conv.StopOther, "OTHER": conv.StopOther,
	} {
		r, err := c.ParseReply([]byte(`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"` + raw + `"}]}`))
		require.NoError(t, err)
		require.Equal(t, want, r.Stop)
		require.Equal(t, raw, r.RawStop)
	}
	r, err = c.ParseReply([]byte(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`))
	require.NoError(t, err)
	require.Equal(t, conv.StopRefusal, r.Stop)
	require.Equal(t, "PROHIBITED_CONTENT", r.RawStop)
}

func TestGeminiStream(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	evs, reply := apitest.DecodeSSE(t, c, apitest.Fixture(t, Descriptor, "stream.sse"))
	require.Equal(t, []rewrite.EventKind{
		rewrite.StreamStart, rewrite.BlockDelta, rewrite.Usage,
		rewrite.BlockDelta, rewrite.Usage,
		rewrite.BlockDelta, rewrite.Usage,
		rewrite.BlockStart, rewrite.BlockStop, rewrite.Finish,
	}, apitest.Kinds(evs))
	require.Equal(t, conv.BlockThinking, evs[1].BlockKind)
	require.Equal(t, rewrite.StreamEvent{Kind: rewrite.BlockStart, Seq: -1, BlockKind: conv.BlockToolCall, ToolName: "read_file",
		ArgsDelta: `{"path": "main.go"}`}, evs[7])
	require.Equal(t, conv.StopToolUse, evs[9].Stop)

	want, err := c.ParseReply(apitest.Fixture(t, Descriptor, "reply.json"))
	require.NoError(t, err)
	require.Equal(t, want, reply)

	// The JSON-array framing decodes to the same events.
	for how, mk := range apitest.Readers(string(apitest.Fixture(t, Descriptor, "stream.json"))) {
		ar := rewrite.NewJSONArrayReader(mk())
		dec := c.NewStreamDecoder()
		var acc rewrite.StreamAccumulator
		var all []rewrite.StreamEvent
		for {
			elem, _, err := ar.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, how)
			if elem == nil {
				continue
			}
			out, err := dec.Decode(rewrite.Event{Data: elem})
			require.NoError(t, err, how)
			acc.Add(out...)
			all = append(all, out...)
		}
		require.Equal(t, evs, all, how)
		require.Equal(t, want, acc.Reply(), how)
	}
}

func TestGeminiStreamError(t *testing.T) {
	evs, err := apitest.CodecFor(Descriptor).NewStreamDecoder().Decode(rewrite.Event{Data: []byte(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`)})
	require.NoError(t, err)
	require.Equal(t, []rewrite.StreamEvent{{Kind: rewrite.Error, Seq: -1, ErrorMessage: "quota"}}, evs)
}
