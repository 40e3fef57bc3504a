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
// may end (Descriptor.IsTerminal): Anthropic message_stop or error; Chat
// Completions data [DONE] or an error chunk; Responses response.completed,
// response.incomplete, response.failed or error; Gemini a chunk carrying a
// finishReason or an error. A stream that ends without one was cut. The
// checks look only at the event name and at the data bytes, without parsing
// JSON, so they are cheap enough for every event.
// A nil api (a stream shepherd does not parse) ends anywhere.
func IsTerminalEvent(api *Descriptor, ev *Event) bool {
	return api == nil || api.IsTerminal(ev.Name, ev.Data)
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
