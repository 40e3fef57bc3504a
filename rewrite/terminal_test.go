package rewrite

import "testing"

func TestIsTerminalEvent(t *testing.T) {
	tests := []struct {
		api        *Descriptor
		name, data string
		want       bool
	}{
		{Anthropic, "message_stop", `{"type":"message_stop"}`, true},
		{Anthropic, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
		{Anthropic, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, false},
		{Anthropic, "ping", `{"type": "ping"}`, false},
		{OpenAIChat, "", `[DONE]`, true},
		{OpenAIChat, "", `{"error":{"message":"boom","type":"server_error"}}`, true},
		{OpenAIChat, "", `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false},
		{OpenAIChat, "", `{"id":"c1","choices":[],"usage":{"prompt_tokens":1},"error_note":"x"}`, false},
		{OpenAIResponses, "response.completed", `{"type":"response.completed"}`, true},
		{OpenAIResponses, "response.incomplete", `{"type":"response.incomplete"}`, true},
		{OpenAIResponses, "response.failed", `{"type":"response.failed"}`, true},
		{OpenAIResponses, "error", `{"type":"error","message":"x"}`, true},
		{OpenAIResponses, "", `{"type":"response.completed","response":{}}`, true},
		{OpenAIResponses, "response.output_text.delta", `{"type":"response.output_text.delta","delta":"hi"}`, false},
		{Gemini, "", `{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}`, true},
		{Gemini, "", `{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, false},
		{Gemini, "", `{"error":{"code":500,"message":"x","status":"INTERNAL"}}`, true},
	}
	for _, tt := range tests {
		ev := Event{Data: []byte(tt.data)}
		if tt.name != "" {
			ev.Name = []byte(tt.name)
		}
		if got := IsTerminalEvent(tt.api, &ev); got != tt.want {
			t.Errorf("%s %q %s: got %v, want %v", tt.api, tt.name, tt.data, got, tt.want)
		}
	}
}
