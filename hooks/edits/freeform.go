package edits

import "github.com/shepherd-proxy/shepherd/rewrite/jsonkit"

// freeformArgs is the view form of a free-form call's raw input text (the
// JSON object {"input": text}, as conv.ToolCall.Args carries it).
func freeformArgs(text string) []byte {
	b := append(make([]byte, 0, len(text)+16), `{"input":`...)
	b = jsonkit.AppendString(b, text)
	return append(b, '}')
}
