package rewrite

import "bytes"

var (
	EventNameMessageStop     = []byte("message_stop")
	EventNameError           = []byte("error")
	DoneData                 = []byte("[DONE]")
	ResponseTerminalPrefixes = [][]byte{[]byte("response.completed"), []byte("response.incomplete"), []byte("response.failed")}
	KeyFinishReason          = []byte(`"finishReason"`)
	KeyFinishReasonSnake     = []byte(`"finish_reason"`)
	KeyTypeError             = []byte(`"type":"error"`)
	keyError                 = []byte(`"error"`)
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

// IsErrorObject reports whether data is a JSON object whose first key is
// "error" (the mid-stream error chunk of OpenAI and Gemini).
func IsErrorObject(data []byte) bool {
	d := bytes.TrimLeft(data, " \t\r\n")
	if len(d) == 0 || d[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(d[1:], " \t\r\n"), keyError)
}
