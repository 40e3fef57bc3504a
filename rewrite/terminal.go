package rewrite

import "bytes"

var (
	nameMessageStop        = []byte("message_stop")
	nameError              = []byte("error")
	dataDone               = []byte("[DONE]")
	prefixResponseTerminal = [][]byte{[]byte("response.completed"), []byte("response.incomplete"), []byte("response.failed")}
	keyFinishReason        = []byte(`"finishReason"`)
	keyFinishReasonSnake   = []byte(`"finish_reason"`)
	keyTypeError           = []byte(`"type":"error"`)
	keyError               = []byte(`"error"`)
)

// IsTerminalEvent reports whether ev is an event after which api's stream
// may end: Anthropic message_stop or error; Chat Completions data [DONE] or
// an error chunk; Responses response.completed, response.incomplete,
// response.failed or error; Gemini a chunk carrying a finishReason or an
// error. A stream that ends without one was cut. The check looks only at the
// event name and at the data bytes, without parsing JSON, so it is cheap
// enough for every event.
func IsTerminalEvent(api API, ev *Event) bool {
	switch api {
	case APIAnthropic:
		return bytes.Equal(ev.Name, nameMessageStop) || bytes.Equal(ev.Name, nameError) ||
			(ev.Name == nil && bytes.Contains(ev.Data, keyTypeError))
	case APIOpenAIChat:
		return bytes.Equal(ev.Data, dataDone) || isErrorObject(ev.Data)
	case APIOpenAIResponses:
		if bytes.Equal(ev.Name, nameError) || bytes.Equal(ev.Data, dataDone) {
			return true
		}
		for _, p := range prefixResponseTerminal {
			if bytes.Equal(ev.Name, p) || (ev.Name == nil && bytes.Contains(ev.Data, p)) {
				return true
			}
		}
		return false
	case APIGemini:
		return bytes.Contains(ev.Data, keyFinishReason) || bytes.Contains(ev.Data, keyFinishReasonSnake) ||
			isErrorObject(ev.Data)
	}
	return true
}

// isErrorObject reports whether data is a JSON object whose first key is
// "error" (the mid-stream error chunk of OpenAI and Gemini).
func isErrorObject(data []byte) bool {
	d := bytes.TrimLeft(data, " \t\r\n")
	if len(d) == 0 || d[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(d[1:], " \t\r\n"), keyError)
}
