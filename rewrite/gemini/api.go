package gemini

import (
	"bytes"
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// conversationMember is the request member that holds the conversation.
const conversationMember = "contents"

// Descriptor is the Gemini generateContent API: POST …/models/…:generateContent
// and …:streamGenerateContent (a JSON array, or SSE with alt=sse) under
// /v1beta/ or /v1/.
var Descriptor = &rewrite.Descriptor{
	Name:           "gemini",
	Conversation:   conversationMember,
	Provider:       "gemini",
	ProviderErrors: true,
	Routes: []rewrite.Route{
		{Name: "generate_content", ModelMethod: ":generateContent"},
		{Name: "stream_generate_content", ModelMethod: ":streamGenerateContent", StreamByPath: true},
	},
	NewCodec: func(views *rewrite.ViewCache) rewrite.Codec {
		return geminiCodec{views: views, parsed: new(rewrite.Parsed)}
	},
	NewSplicer: func() rewrite.StreamSplicer { return newGeminiSplicer() },
	IsTerminal: geminiTerminal,
	// Gemini's clients accept nothing between chunks but a chunk (the Go
	// SDK rejects an SSE comment as an invalid chunk, the JS SDK matches
	// "data: " at the start of its buffer): a held reply sends no
	// keepalive bytes.
	KeepAlive:   []byte{},
	ModelInPath: true,
	Credential:  rewrite.Credential{Header: "X-Goog-Api-Key"},
	TopLevel: map[string]rewrite.JSONKind{
		"contents": rewrite.KindArray, "systemInstruction": rewrite.KindObject, "system_instruction": rewrite.KindObject,
		"tools": rewrite.KindArray, "generationConfig": rewrite.KindObject, "generation_config": rewrite.KindObject,
		"toolConfig": rewrite.KindObject, "tool_config": rewrite.KindObject,
	},
}

// geminiTerminal: a chunk carrying a finishReason, or an error chunk.
func geminiTerminal(name, data []byte) bool {
	return bytes.Contains(data, rewrite.KeyFinishReason) || bytes.Contains(data, rewrite.KeyFinishReasonSnake) ||
		rewrite.IsErrorObject(data)
}

// geminiStatus maps an HTTP status to the Google RPC status name.
func geminiStatus(status int) string {
	switch status {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 502, 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 400 && status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// geminiError renders {"error":{"code":…,"message":…,"status":…}}.
func geminiError(status int, message string) []byte {
	b := append([]byte(nil), `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"status":`...)
	b = jsonkit.AppendString(b, geminiStatus(status))
	return append(b, "}}"...)
}

// geminiViews tags Gemini contents in the view cache.
var (
	geminiViews      = rewrite.NewViewParser("gemini")
	geminiToolsViews = rewrite.NewViewParser("gemini_tools")
)
