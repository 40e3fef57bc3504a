package rewrite

import "bytes"

// OpenAIChat is the OpenAI Chat Completions API: POST /v1/chat/completions
// (JSON or SSE). Its error shape is the one OpenAI clients get elsewhere.
var OpenAIChat = &Descriptor{
	Name:           "openai_chat",
	Provider:       "openai",
	ProviderErrors: true,
	Routes:         []Route{{Name: "chat_completions", Path: "/v1/chat/completions"}},
	NewCodec:       func(views *ViewCache) Codec { return chatCodec{views: views} },
	NewSplicer:     func() StreamSplicer { return newChatSplicer() },
	IsTerminal:     chatTerminal,
	TopLevel: map[string]JSONKind{
		"model": KindString, "messages": KindArray, "tools": KindArray, "max_tokens": KindNumber,
		"max_completion_tokens": KindNumber, "stream_options": KindObject, "temperature": KindNumber,
		"n": KindNumber, "parallel_tool_calls": KindBool,
	},
}

// chatTerminal: data [DONE] or an error chunk.
func chatTerminal(name, data []byte) bool {
	return bytes.Equal(data, dataDone) || isErrorObject(data)
}

// chatViews tags Chat messages in the view cache.
var chatViews = newViewParser("openai_chat")
