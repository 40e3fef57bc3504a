package openaichat

import (
	"bytes"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// conversationMember is the request member that holds the conversation.
const conversationMember = "messages"

// Descriptor is the OpenAI Chat Completions API: POST /v1/chat/completions
// (JSON or SSE). Its error shape is the one OpenAI clients get elsewhere.
var Descriptor = &rewrite.Descriptor{
	Name:           "openai_chat",
	Conversation:   conversationMember,
	Provider:       "openai",
	ProviderErrors: true,
	Routes:         []rewrite.Route{{Name: "chat_completions", Path: "/v1/chat/completions"}},
	NewCodec: func(views *rewrite.ViewCache) rewrite.Codec {
		return chatCodec{views: views, parsed: new(rewrite.Parsed)}
	},
	NewSplicer: func() rewrite.StreamSplicer { return newChatSplicer() },
	IsTerminal: chatTerminal,
	Credential: rewrite.Credential{Header: "Authorization", Prefix: "Bearer "},
	TopLevel: map[string]rewrite.JSONKind{
		"model": rewrite.KindString, "messages": rewrite.KindArray, "tools": rewrite.KindArray, "max_tokens": rewrite.KindNumber,
		"max_completion_tokens": rewrite.KindNumber, "stream_options": rewrite.KindObject, "temperature": rewrite.KindNumber,
		"n": rewrite.KindNumber, "parallel_tool_calls": rewrite.KindBool,
	},
}

// chatTerminal: data [DONE] or an error chunk.
func chatTerminal(name, data []byte) bool {
	return bytes.Equal(data, rewrite.DoneData) || rewrite.IsErrorObject(data)
}

// chatViews tags Chat messages in the view cache.
var (
	chatViews      = rewrite.NewViewParser("openai_chat")
	chatToolsViews = rewrite.NewViewParser("openai_chat_tools")
)
