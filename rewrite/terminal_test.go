package rewrite

import "testing"

func TestIsTerminalEvent(t *testing.T) {
	tests := []struct {
		api        API
		name, data string
		want       bool
	}{
		{APIAnthropic, "message_stop", `{"type":"message_stop"}`, true},
		{APIAnthropic, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
		{APIAnthropic, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, false},
		{APIAnthropic, "ping", `{"type": "ping"}`, false},
		{APIOpenAIChat, "", `[DONE]`, true},
		{APIOpenAIChat, "", `{"error":{"message":"boom","type":"server_error"}}`, true},
		{APIOpenAIChat, "", `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false},
		{APIOpenAIChat, "", `{"id":"c1","choices":[],"usage":{"prompt_tokens":1},"error_note":"x"}`, false},
		{APIOpenAIResponses, "response.completed", `{"type":"response.completed"}`, true},
		{APIOpenAIResponses, "response.incomplete", `{"type":"response.incomplete"}`, true},
		{APIOpenAIResponses, "response.failed", `{"type":"response.failed"}`, true},
		{APIOpenAIResponses, "error", `{"type":"error","message":"x"}`, true},
		{APIOpenAIResponses, "", `{"type":"response.completed","response":{}}`, true},
		{APIOpenAIResponses, "response.output_text.delta", `{"type":"response.output_text.delta","delta":"hi"}`, false},
		{APIGemini, "", `{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}`, true},
		{APIGemini, "", `{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, false},
		{APIGemini, "", `{"error":{"code":500,"message":"x","status":"INTERNAL"}}`, true},
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
