package openaichat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestErrorShapes(t *testing.T) {
	apitest.CheckErrorShapes(t, Descriptor, `bad "thing" <x>`, []apitest.ErrorShape{
		{429, `{"error":{"message":"bad \"thing\" <x>","type":"rate_limit_error","param":null,"code":null}}`,
			"data: {\"error\":{\"message\":\"bad \\\"thing\\\" <x>\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":null}}\n\n"},
	})
}

func TestIsTerminalEvent(t *testing.T) {
	apitest.CheckTerminal(t, Descriptor, []apitest.Terminal{
		{"", `[DONE]`, true},
		{"", `{"error":{"message":"boom","type":"server_error"}}`, true},
		{"", `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false},
		{"", `{"id":"c1","choices":[],"usage":{"prompt_tokens":1},"error_note":"x"}`, false},
	})
}

func TestSideRequest(t *testing.T) {
	apitest.CheckSide(t, Descriptor, []apitest.Side{
		{"agent turn", `{"messages":[],"tools":[{"type":"function","function":{"name":"x"}}]}`, ""},
		{"legacy functions", `{"messages":[],"functions":[{"name":"x"}]}`, ""},
		{"no tools", `{"messages":[]}`, rewrite.SideNoTools},
		{"json_object", `{"tools":[{"type":"function"}],"response_format":{"type":"json_object"}}`, rewrite.SideJSONOutput},
		{"json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"r"}}}`, rewrite.SideJSONOutput},
		{"text format", `{"tools":[{"type":"function"}],"response_format":{"type":"text"}}`, ""},
		{"tool_choice none", `{"tools":[{"type":"function"}],"tool_choice":"none"}`, rewrite.SideToolChoiceNone},
		{"tool_choice object", `{"tools":[{"type":"function"}],"tool_choice":{"type":"function","function":{"name":"x"}}}`, ""},
		{"function_call none", `{"functions":[{"name":"x"}],"function_call":"none"}`, rewrite.SideToolChoiceNone},
	})
}

func TestPeekRequestTopLevel(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","messages":{"role":"user"}}`: "messages must be an array",
		`{"max_completion_tokens":"9"}`:            "max_completion_tokens must be a number",
	} {
		_, err := rewrite.PeekRequest(Descriptor, []byte(body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, body)
		require.Contains(t, err.Error(), want, body)
	}
}
