package rewrite

import "bytes"

// OpenAIResponses is the OpenAI Responses API: POST /v1/responses (JSON or
// SSE).
var OpenAIResponses = &Descriptor{
	Name:       "openai_responses",
	Provider:   "openai",
	Routes:     []Route{{Name: "responses", Path: "/v1/responses"}},
	NewCodec:   func(views *ViewCache) Codec { return responsesCodec{views: views} },
	NewSplicer: func() StreamSplicer { return newResponsesSplicer() },
	IsTerminal: responsesTerminal,
	TopLevel: map[string]JSONKind{
		"model": KindString, "input": KindStringOrArray, "instructions": KindString, "tools": KindArray,
		"max_output_tokens": KindNumber, "previous_response_id": KindString, "store": KindBool,
		"parallel_tool_calls": KindBool, "reasoning": KindObject, "temperature": KindNumber,
	},
}

// responsesTerminal: response.completed, response.incomplete,
// response.failed or error (by event name, or in an unnamed event's data),
// or data [DONE].
func responsesTerminal(name, data []byte) bool {
	if bytes.Equal(name, nameError) || bytes.Equal(data, dataDone) {
		return true
	}
	for _, p := range prefixResponseTerminal {
		if bytes.Equal(name, p) || (name == nil && bytes.Contains(data, p)) {
			return true
		}
	}
	return false
}

// responsesViews tags Responses input items in the view cache.
var responsesViews = newViewParser("openai_responses")
