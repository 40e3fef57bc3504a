package rewrite

import "bytes"

// Anthropic is the Anthropic Messages API: POST /v1/messages (JSON or SSE)
// and /v1/messages/count_tokens.
var Anthropic = &Descriptor{
	Name:           "anthropic",
	Provider:       "anthropic",
	ProviderErrors: true,
	Routes: []Route{
		{Name: "messages", Path: "/v1/messages"},
		{Name: "count_tokens", Path: "/v1/messages/count_tokens"},
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
