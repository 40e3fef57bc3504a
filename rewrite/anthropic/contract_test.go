package anthropic

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestErrorShapes(t *testing.T) {
	apitest.CheckErrorShapes(t, Descriptor, `bad "thing" <x>`, []apitest.ErrorShape{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad \"thing\" <x>"}}`,
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad \\\"thing\\\" <x>\"}}\n\n"},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"bad \"thing\" <x>"}}`, ""},
	})
}

func TestIsTerminalEvent(t *testing.T) {
	apitest.CheckTerminal(t, Descriptor, []apitest.Terminal{
		{"message_stop", `{"type":"message_stop"}`, true},
		{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, false},
		{"ping", `{"type": "ping"}`, false},
	})
}

func TestSideRequest(t *testing.T) {
	apitest.CheckSide(t, Descriptor, []apitest.Side{
		{"agent turn", `{"model":"m","messages":[],"tools":[{"name":"Bash","input_schema":{}}]}`, ""},
		{"tool_choice auto", `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"auto"}}`, ""},
		{"title call without tools", `{"model":"m","system":"Summarize in a title","messages":[{"role":"user","content":"hi"}]}`, rewrite.SideNoTools},
		{"empty tools", `{"tools":[],"messages":[]}`, rewrite.SideNoTools},
		{"tool_choice none", `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"none"}}`, rewrite.SideToolChoiceNone},
		{"structured output", `{"tools":[{"name":"Bash"}],"output_format":{"type":"json_schema","schema":{}}}`, rewrite.SideJSONOutput},
	})
}

func TestPeekRequest(t *testing.T) {
	h, err := rewrite.PeekRequest(Descriptor, []byte(`{"model":"m","stream":true,"metadata":{"user_id":"u_1"},"prompt_cache_key":"conv-9","messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	require.Equal(t, rewrite.SessionHints{Stream: true, MetadataUserID: "u_1", PromptCacheKey: "conv-9"}, h)

	h, err = rewrite.PeekRequest(Descriptor, []byte(" {\"stream\":null,\"metadata\":null}\n"))
	require.NoError(t, err)
	require.Equal(t, rewrite.SessionHints{}, h)

	for body, want := range map[string]string{
		`{"model":`:                    "body is not valid JSON",
		`[1,2]`:                        "body must be a JSON object",
		`{"stream":"yes"}`:             "stream must be a boolean",
		`{"metadata":{"user_id":7}}`:   "metadata.user_id must be a string",
		`{"metadata":"x"}`:             "metadata must be an object",
		`{"prompt_cache_key":{"a":1}}`: "prompt_cache_key must be a string",
	} {
		_, err := rewrite.PeekRequest(Descriptor, []byte(body))
		require.Error(t, err, body)
		require.True(t, errors.Is(err, rewrite.ErrMalformed), body)
		require.Contains(t, err.Error(), want, body)
	}
}

func BenchmarkPeekRequest(b *testing.B) {
	body := apitest.Fixture(b, Descriptor, "request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := rewrite.PeekRequest(Descriptor, body); err != nil {
			b.Fatal(err)
		}
	}
}
