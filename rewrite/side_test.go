package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSideRequest(t *testing.T) {
	cases := []struct {
		api  *Descriptor
		name string
		body string
		want string
	}{
		// Anthropic Messages.
		{Anthropic, "agent turn", `{"model":"m","messages":[],"tools":[{"name":"Bash","input_schema":{}}]}`, ""},
		{Anthropic, "tool_choice auto", `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"auto"}}`, ""},
		{Anthropic, "title call without tools", `{"model":"m","system":"Summarize in a title","messages":[{"role":"user","content":"hi"}]}`, SideNoTools},
		{Anthropic, "empty tools", `{"tools":[],"messages":[]}`, SideNoTools},
		{Anthropic, "tool_choice none", `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"none"}}`, SideToolChoiceNone},
		{Anthropic, "structured output", `{"tools":[{"name":"Bash"}],"output_format":{"type":"json_schema","schema":{}}}`, SideJSONOutput},
		// OpenAI Chat.
		{OpenAIChat, "agent turn", `{"messages":[],"tools":[{"type":"function","function":{"name":"x"}}]}`, ""},
		{OpenAIChat, "legacy functions", `{"messages":[],"functions":[{"name":"x"}]}`, ""},
		{OpenAIChat, "no tools", `{"messages":[]}`, SideNoTools},
		{OpenAIChat, "json_object", `{"tools":[{"type":"function"}],"response_format":{"type":"json_object"}}`, SideJSONOutput},
		{OpenAIChat, "json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"r"}}}`, SideJSONOutput},
		{OpenAIChat, "text format", `{"tools":[{"type":"function"}],"response_format":{"type":"text"}}`, ""},
		{OpenAIChat, "tool_choice none", `{"tools":[{"type":"function"}],"tool_choice":"none"}`, SideToolChoiceNone},
		{OpenAIChat, "tool_choice object", `{"tools":[{"type":"function"}],"tool_choice":{"type":"function","function":{"name":"x"}}}`, ""},
		{OpenAIChat, "function_call none", `{"functions":[{"name":"x"}],"function_call":"none"}`, SideToolChoiceNone},
		// OpenAI Responses.
		{OpenAIResponses, "agent turn", `{"input":[],"tools":[{"type":"function","name":"shell"}]}`, ""},
		{OpenAIResponses, "no tools", `{"input":"title this"}`, SideNoTools},
		{OpenAIResponses, "text.format json_schema", `{"tools":[{"type":"function"}],"text":{"format":{"type":"json_schema","name":"r","schema":{}}}}`, SideJSONOutput},
		{OpenAIResponses, "text.format json_object", `{"tools":[{"type":"function"}],"text":{"format":{"type":"json_object"}}}`, SideJSONOutput},
		{OpenAIResponses, "text.format text", `{"tools":[{"type":"function"}],"text":{"format":{"type":"text"},"verbosity":"low"}}`, ""},
		{OpenAIResponses, "tool_choice none", `{"tools":[{"type":"function"}],"tool_choice":"none"}`, SideToolChoiceNone},
		// Gemini.
		{Gemini, "agent turn", `{"contents":[],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`, ""},
		{Gemini, "snake case", `{"contents":[],"tools":[{"function_declarations":[{"name":"x"}]}]}`, ""},
		{Gemini, "no tools", `{"contents":[]}`, SideNoTools},
		{Gemini, "only google search", `{"contents":[],"tools":[{"googleSearch":{}}]}`, SideNoTools},
		{Gemini, "json mime type", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`, SideJSONOutput},
		{Gemini, "text mime type", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseMimeType":"text/plain"}}`, ""},
		{Gemini, "response schema", `{"contents":[],"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`, SideJSONOutput},
		{Gemini, "response json schema", `{"contents":[],"generationConfig":{"responseJsonSchema":{"type":"object"}}}`, SideJSONOutput},
		{Gemini, "null schema", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"generationConfig":{"responseSchema":null}}`, ""},
		{Gemini, "mode NONE", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`, SideToolChoiceNone},
		{Gemini, "mode AUTO", `{"tools":[{"functionDeclarations":[{"name":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.api.Name+"/"+c.name, func(t *testing.T) {
			require.Equal(t, c.want, SideRequest(codecFor(c.api), []byte(c.body)))
		})
	}
}

func TestSideRequestEveryCodec(t *testing.T) {
	for _, api := range []*Descriptor{Anthropic, OpenAIChat, OpenAIResponses, Gemini} {
		_, ok := codecFor(api).(sideClassifier)
		require.True(t, ok, "%s codec classifies side requests", api)
		require.Equal(t, SideNoTools, SideRequest(codecFor(api), []byte(`not json`)))
	}
}
