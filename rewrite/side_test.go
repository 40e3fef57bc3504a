package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSideRequest(t *testing.T) {
	cases := []struct {
		api  API
		name string
		body string
		want string
	}{
		// Anthropic Messages.
		{APIAnthropic, "agent turn", `{"model":"m","messages":[],"tools":[{"name":"Bash","input_schema":{}}]}`, ""},
		{APIAnthropic, "tool_choice auto", `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"auto"}}`, ""},
		{APIAnthropic, "title call without tools", `{"model":"m","system":"Summarize in a title","messages":[{"role":"user","content":"hi"}]}`, SideNoTools},
		{APIAnthropic, "empty tools", `{"tools":[],"messages":[]}`, SideNoTools},
		{APIAnthropic, "tool_choice none", `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"none"}}`, SideToolChoiceNone},
		{APIAnthropic, "structured output", `{"tools":[{"name":"Bash"}],"output_format":{"type":"json_schema","schema":{}}}`, SideJSONOutput},
		// OpenAI Chat.
		{APIOpenAIChat, "agent turn", `{"messages":[],"tools":[{"type":"function","function":{"name":"x"}}]}`, ""},
		{APIOpenAIChat, "legacy functions", `{"messages":[],"functions":[{"name":"x"}]}`, ""},
		{APIOpenAIChat, "no tools", `{"messages":[]}`, SideNoTools},
		{APIOpenAIChat, "json_object", `{"tools":[{"type":"function"}],"response_format":{"type":"json_object"}}`, SideJSONOutput},
		{APIOpenAIChat, "json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"r"}}}`, SideJSONOutput},
		{APIOpenAIChat, "text format", `{"tools":[{"type":"function"}],"response_format":{"type":"text"}}`, ""},
		{APIOpenAIChat, "tool_choice none", `{"tools":[{"type":"function"}],"tool_choice":"none"}`, SideToolChoiceNone},
		{APIOpenAIChat, "tool_choice object", `{"tools":[{"type":"function"}],"tool_choice":{"type":"function","function":{"name":"x"}}}`, ""},
		{APIOpenAIChat, "function_call none", `{"functions":[{"name":"x"}],"function_call":"none"}`, SideToolChoiceNone},
		// OpenAI Responses.
		{APIOpenAIResponses, "agent turn", `{"input":[],"tools":[{"type":"function","name":"shell"}]}`, ""},
		{APIOpenAIResponses, "no tools", `{"input":"title this"}`, SideNoTools},
		{APIOpenAIResponses, "text.format json_schema", `{"tools":[{"type":"function"}],"text":{"format":{"type":"json_schema","name":"r","schema":{}}}}`, SideJSONOutput},
		{APIOpenAIResponses, "text.format json_object", `{"tools":[{"type":"function"}],"text":{"format":{"type":"json_object"}}}`, SideJSONOutput},
		{APIOpenAIResponses, "text.format text", `{"tools":[{"type":"function"}],"text":{"format":{"type":"text"},"verbosity":"low"}}`, ""},
		{APIOpenAIResponses, "tool_choice none", `{"tools":[{"type":"function"}],"tool_choice":"none"}`, SideToolChoiceNone},
		// Gemini.
		{APIGemini, "agent turn", `{"contents":[],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`, ""},
		{APIGemini, "snake case", `{"contents":[],"tools":[{"function_declarations":[{"name":"x"}]}]}`, ""},
		{APIGemini, "no tools", `{"contents":[]}`, SideNoTools},
		{APIGemini, "only google search", `{"contents":[],"tools":[{"googleSearch":{}}]}`, SideNoTools},
		{APIGemini, "json mime type", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`, SideJSONOutput},
		{APIGemini, "text mime type", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseMimeType":"text/plain"}}`, ""},
		{APIGemini, "response schema", `{"contents":[],"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`, SideJSONOutput},
		{APIGemini, "response json schema", `{"contents":[],"generationConfig":{"responseJsonSchema":{"type":"object"}}}`, SideJSONOutput},
		{APIGemini, "null schema", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseSchema":null}}`, ""},
		{APIGemini, "mode NONE", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`, SideToolChoiceNone},
		{APIGemini, "mode AUTO", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`, ""},
	}
	for _, c := range cases {
		t.Run(string(c.api)+"/"+c.name, func(t *testing.T) {
			require.Equal(t, c.want, SideRequest(For(c.api), []byte(c.body)))
		})
	}
}

func TestSideRequestEveryCodec(t *testing.T) {
	for _, api := range []API{APIAnthropic, APIOpenAIChat, APIOpenAIResponses, APIGemini} {
		_, ok := For(api).(sideClassifier)
		require.True(t, ok, "%s codec classifies side requests", api)
		require.Equal(t, SideNoTools, SideRequest(For(api), []byte(`not json`)))
	}
}
