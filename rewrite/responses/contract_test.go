package responses

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestErrorShapes(t *testing.T) {
	apitest.CheckErrorShapes(t, Descriptor, `bad "thing" <x>`, []apitest.ErrorShape{
		{502, `{"error":{"message":"bad \"thing\" <x>","type":"server_error","param":null,"code":null}}`,
			"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"bad \\\"thing\\\" <x>\",\"param\":null}\n\n"},
	})
}

func TestIsTerminalEvent(t *testing.T) {
	apitest.CheckTerminal(t, Descriptor, []apitest.Terminal{
		{"response.completed", `{"type":"response.completed"}`, true},
		{"response.incomplete", `{"type":"response.incomplete"}`, true},
		{"response.failed", `{"type":"response.failed"}`, true},
		{"error", `{"type":"error","message":"x"}`, true},
		{"", `{"type":"response.completed","response":{}}`, true},
		{"response.output_text.delta", `{"type":"response.output_text.delta","delta":"hi"}`, false},
	})
}

func TestSideRequest(t *testing.T) {
	apitest.CheckSide(t, Descriptor, []apitest.Side{
		{"agent turn", `{"input":[],"tools":[{"type":"function","name":"shell"}]}`, ""},
		{"no tools", `{"input":"title this"}`, rewrite.SideNoTools},
		{"text.format json_schema", `{"tools":[{"type":"function"}],"text":{"format":{"type":"json_schema","name":"r","schema":{}}}}`, rewrite.SideJSONOutput},
		{"text.format json_object", `{"tools":[{"type":"function"}],"text":{"format":{"type":"json_object"}}}`, rewrite.SideJSONOutput},
		{"text.format text", `{"tools":[{"type":"function"}],"text":{"format":{"type":"text"},"verbosity":"low"}}`, ""},
		{"tool_choice none", `{"tools":[{"type":"function"}],"tool_choice":"none"}`, rewrite.SideToolChoiceNone},
	})
}

func TestPeekRequestTopLevel(t *testing.T) {
	for body, want := range map[string]string{
		`{"input":42}`:   "input must be a string or an array",
		`{"store":"no"}`: "store must be a boolean",
	} {
		_, err := rewrite.PeekRequest(Descriptor, []byte(body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, body)
		require.Contains(t, err.Error(), want, body)
	}
}
