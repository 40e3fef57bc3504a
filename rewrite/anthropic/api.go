package anthropic

import (
	"bytes"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// conversationMember is the request member that holds the conversation.
const conversationMember = "messages"

// Descriptor is the Anthropic Messages API: POST /v1/messages (JSON or SSE)
// and /v1/messages/count_tokens.
var Descriptor = &rewrite.Descriptor{
	Name:           "anthropic",
	Conversation:   conversationMember,
	Provider:       "anthropic",
	ProviderErrors: true,
	Routes: []rewrite.Route{
		{Name: "messages", Path: "/v1/messages"},
		{Name: "count_tokens", Path: "/v1/messages/count_tokens", NoTurn: true},
	},
	NewCodec: func(views *rewrite.ViewCache) rewrite.Codec {
		return anthropicCodec{views: views, parsed: new(rewrite.Parsed)}
	},
	NewSplicer: func() rewrite.StreamSplicer { return newAnthropicSplicer() },
	IsTerminal: anthropicTerminal,
	Credential: rewrite.Credential{Header: "X-Api-Key"},
	TopLevel: map[string]rewrite.JSONKind{
		"model": rewrite.KindString, "max_tokens": rewrite.KindNumber, "messages": rewrite.KindArray, "system": rewrite.KindStringOrArray,
		"tools": rewrite.KindArray, "tool_choice": rewrite.KindObject, "thinking": rewrite.KindObject, "stop_sequences": rewrite.KindArray,
		"temperature": rewrite.KindNumber, "top_p": rewrite.KindNumber, "top_k": rewrite.KindNumber,
	},
}

// anthropicTerminal: message_stop or error (by event name, or an unnamed
// event whose data is an error object).
func anthropicTerminal(name, data []byte) bool {
	return bytes.Equal(name, rewrite.EventNameMessageStop) || bytes.Equal(name, rewrite.EventNameError) ||
		(name == nil && bytes.Contains(data, rewrite.KeyTypeError))
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
	anthropicViews       = rewrite.NewViewParser("anthropic")
	anthropicSystemViews = rewrite.NewViewParser("anthropic_system")
	anthropicToolsViews  = rewrite.NewViewParser("anthropic_tools")
)
