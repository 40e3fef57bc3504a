package responses

import (
	"bytes"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// conversationMember is the request member that holds the conversation.
const conversationMember = "input"

// Descriptor is the OpenAI Responses API: POST /v1/responses (JSON or
// SSE).
var Descriptor = &rewrite.Descriptor{
	Name:         "openai_responses",
	Conversation: conversationMember,
	Provider:     "openai",
	Routes:       []rewrite.Route{{Name: "responses", Path: "/v1/responses"}},
	NewCodec: func(views *rewrite.ViewCache) rewrite.Codec {
		return responsesCodec{views: views, parsed: new(rewrite.Parsed)}
	},
	NewSplicer: func() rewrite.StreamSplicer { return newResponsesSplicer() },
	IsTerminal: responsesTerminal,
	Credential: rewrite.Credential{Header: "Authorization", Prefix: "Bearer "},
	TopLevel: map[string]rewrite.JSONKind{
		"model": rewrite.KindString, "input": rewrite.KindStringOrArray, "instructions": rewrite.KindString, "tools": rewrite.KindArray,
		"max_output_tokens": rewrite.KindNumber, "previous_response_id": rewrite.KindString, "store": rewrite.KindBool,
		"parallel_tool_calls": rewrite.KindBool, "reasoning": rewrite.KindObject, "temperature": rewrite.KindNumber,
	},
}

// responsesTerminal: response.completed, response.incomplete,
// response.failed or error (by event name, or in an unnamed event's data),
// or data [DONE].
func responsesTerminal(name, data []byte) bool {
	if bytes.Equal(name, rewrite.EventNameError) || bytes.Equal(data, rewrite.DoneData) {
		return true
	}
	for _, p := range rewrite.ResponseTerminalPrefixes {
		if bytes.Equal(name, p) || (name == nil && bytes.Contains(data, p)) {
			return true
		}
	}
	return false
}

// responsesViews tags Responses input items in the view cache.
var (
	responsesViews      = rewrite.NewViewParser("openai_responses")
	responsesToolsViews = rewrite.NewViewParser("openai_responses_tools")
)
