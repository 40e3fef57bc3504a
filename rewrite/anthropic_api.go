package rewrite

import (
	"bytes"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// Anthropic is the Anthropic Messages API: POST /v1/messages (JSON or SSE)
// and /v1/messages/count_tokens.
var Anthropic = &Descriptor{
	Name:           "anthropic",
	Provider:       "anthropic",
	ProviderErrors: true,
	Routes: []Route{
		{Name: "messages", Path: "/v1/messages"},
		{Name: "count_tokens", Path: "/v1/messages/count_tokens", NoTurn: true},
	},
	NewCodec:   func(views *ViewCache) Codec { return anthropicCodec{views: views} },
	NewSplicer: func() StreamSplicer { return newAnthropicSplicer() },
	IsTerminal: anthropicTerminal,
	TopLevel: map[string]JSONKind{
		"model": KindString, "max_tokens": KindNumber, "messages": KindArray, "system": KindStringOrArray,
		"tools": KindArray, "tool_choice": KindObject, "thinking": KindObject, "stop_sequences": KindArray,
		"temperature": KindNumber, "top_p": KindNumber, "top_k": KindNumber,
	},
}

// anthropicTerminal: message_stop or error (by event name, or an unnamed
// event whose data is an error object).
func anthropicTerminal(name, data []byte) bool {
	return bytes.Equal(name, nameMessageStop) || bytes.Equal(name, nameError) ||
		(name == nil && bytes.Contains(data, keyTypeError))
}

// anthropicErrorType maps an HTTP status to Anthropic's error.type.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error" // 500, 502, 503 and anything else
}

// anthropicError renders {"type":"error","error":{"type":…,"message":…}}.
func anthropicError(status int, message string) []byte {
	b := append([]byte(nil), `{"type":"error","error":{"type":`...)
	b = jsonkit.AppendString(b, anthropicErrorType(status))
	b = append(b, `,"message":`...)
	b = jsonkit.AppendString(b, message)
	return append(b, "}}"...)
}

// The view-cache tags of the Anthropic parsers: messages and system blocks.
var (
	anthropicViews       = newViewParser("anthropic")
	anthropicSystemViews = newViewParser("anthropic_system")
)
