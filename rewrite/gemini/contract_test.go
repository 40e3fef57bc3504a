package gemini

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestErrorShapes(t *testing.T) {
	apitest.CheckErrorShapes(t, Descriptor, `bad "thing" <x>`, []apitest.ErrorShape{
		{503, `{"error":{"code":503,"message":"bad \"thing\" <x>","status":"UNAVAILABLE"}}`,
			"data: {\"error\":{\"code\":503,\"message\":\"bad \\\"thing\\\" <x>\",\"status\":\"UNAVAILABLE\"}}\n\n"},
	})
}

func TestIsTerminalEvent(t *testing.T) {
	apitest.CheckTerminal(t, Descriptor, []apitest.Terminal{
		{"", `{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}`, true},
		{"", `{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, false},
		{"", `{"error":{"code":500,"message":"x","status":"INTERNAL"}}`, true},
	})
}

func TestSideRequest(t *testing.T) {
	apitest.CheckSide(t, Descriptor, []apitest.Side{
		{"agent turn", `{"contents":[],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`, ""},
		{"snake case", `{"contents":[],"tools":[{"function_declarations":[{"name":"x"}]}]}`, ""},
		{"no tools", `{"contents":[]}`, rewrite.SideNoTools},
		{"only google search", `{"contents":[],"tools":[{"googleSearch":{}}]}`, rewrite.SideNoTools},
		{"json mime type", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`, rewrite.SideJSONOutput},
		{"text mime type", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseMimeType":"text/plain"}}`, ""},
		{"response schema", `{"contents":[],"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`, rewrite.SideJSONOutput},
		{"response json schema", `{"contents":[],"generationConfig":{"responseJsonSchema":{"type":"object"}}}`, rewrite.SideJSONOutput},
		{"null schema", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseSchema":null}}`, ""},
		{"mode NONE", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`, rewrite.SideToolChoiceNone},
		{"mode AUTO", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`, ""},
	})
}

func TestPeekRequestTopLevel(t *testing.T) {
	for body, want := range map[string]string{
		`{"contents":{}}`:         "contents must be an array",
		`{"generationConfig":[]}`: "generationConfig must be an object",
	} {
		_, err := rewrite.PeekRequest(Descriptor, []byte(body))
		require.ErrorIs(t, err, rewrite.ErrMalformed, body)
		require.Contains(t, err.Error(), want, body)
	}
	// A field of another API is not checked.
	_, err := rewrite.PeekRequest(Descriptor, []byte(`{"messages":"whatever"}`))
	require.NoError(t, err)
}
