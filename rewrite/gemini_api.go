package rewrite

import (
	"bytes"
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// Gemini is the Gemini generateContent API: POST …/models/…:generateContent
// and …:streamGenerateContent (a JSON array, or SSE with alt=sse) under
// /v1beta/ or /v1/.
var Gemini = &Descriptor{
	Name:           "gemini",
	Provider:       "gemini",
	ProviderErrors: true,
	Routes: []Route{
		{Name: "generate_content", ModelMethod: ":generateContent"},
		{Name: "stream_generate_content", ModelMethod: ":streamGenerateContent", StreamByPath: true},
	},
	NewCodec:   func(views *ViewCache) Codec { return geminiCodec{views: views} },
	NewSplicer: func() StreamSplicer { return newGeminiSplicer() },
	IsTerminal: geminiTerminal,
	TopLevel: map[string]JSONKind{
		"contents": KindArray, "systemInstruction": KindObject, "system_instruction": KindObject,
		"tools": KindArray, "generationConfig": KindObject, "generation_config": KindObject,
		"toolConfig": KindObject, "tool_config": KindObject,
	},
}

// geminiTerminal: a chunk carrying a finishReason, or an error chunk.
func geminiTerminal(name, data []byte) bool {
	return bytes.Contains(data, keyFinishReason) || bytes.Contains(data, keyFinishReasonSnake) ||
		isErrorObject(data)
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
var geminiViews = newViewParser("gemini")
