package rewrite

import (
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// SessionHints are the few request fields the pass-through path reads:
// whether the agent asked for a stream, and the session hints of the body.
type SessionHints struct {
	Stream         bool
	MetadataUserID string // Anthropic metadata.user_id
	PromptCacheKey string // OpenAI prompt_cache_key
}

// fieldCheck validates one top-level member.
type fieldCheck func(v gjson.Result, field string) error

// topLevel lists, per API, the top-level members whose JSON type shepherd
// checks on every request: the structure of the wire API, not the content.
var topLevel = map[API]map[string]fieldCheck{
	APIAnthropic: {
		"model": wantString, "max_tokens": wantNumber, "messages": wantArray, "system": wantStringOrArray,
		"tools": wantArray, "tool_choice": wantObject, "thinking": wantObject, "stop_sequences": wantArray,
		"temperature": wantNumber, "top_p": wantNumber, "top_k": wantNumber,
	},
	APIOpenAIChat: {
		"model": wantString, "messages": wantArray, "tools": wantArray, "max_tokens": wantNumber,
		"max_completion_tokens": wantNumber, "stream_options": wantObject, "temperature": wantNumber,
		"n": wantNumber, "parallel_tool_calls": wantBool,
	},
	APIOpenAIResponses: {
		"model": wantString, "input": wantStringOrArray, "instructions": wantString, "tools": wantArray,
		"max_output_tokens": wantNumber, "previous_response_id": wantString, "store": wantBool,
		"parallel_tool_calls": wantBool, "reasoning": wantObject, "temperature": wantNumber,
	},
	APIGemini: {
		"contents": wantArray, "systemInstruction": wantObject, "system_instruction": wantObject,
		"tools": wantArray, "generationConfig": wantObject, "generation_config": wantObject,
		"toolConfig": wantObject, "tool_config": wantObject,
	},
}

// PeekRequest validates body as a JSON object of api's request shape and
// reads the session hints, without building the full view (ParseRequest
// costs several times more on a long conversation). It checks the JSON type
// of the API's top-level members and of the members it reads; the content
// of messages is left to the upstream. Errors wrap ErrMalformed and name the
// field, as ParseRequest's do.
func PeekRequest(api API, body []byte) (SessionHints, error) {
	var h SessionHints
	root, err := parseRoot(body)
	if err != nil {
		return h, err
	}
	checks := topLevel[api]
	root.ForEach(func(k, v gjson.Result) bool {
		if check, ok := checks[k.Str]; ok {
			if err = check(v, k.Str); err != nil {
				return false
			}
		}
		switch k.Str {
		case "stream":
			if err = wantBool(v, "stream"); err == nil {
				h.Stream = v.Type == gjson.True
			}
		case "metadata":
			if err = wantObject(v, "metadata"); err == nil {
				uid := v.Get("user_id")
				if err = wantString(uid, "metadata.user_id"); err == nil {
					h.MetadataUserID = jsonkit.OwnedString(uid)
				}
			}
		case "prompt_cache_key":
			if err = wantString(v, "prompt_cache_key"); err == nil {
				h.PromptCacheKey = jsonkit.OwnedString(v)
			}
		}
		return err == nil
	})
	return h, err
}
