package rewrite

import "bytes"

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
