package edits

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// resultText is what a tool result block says: its text and whether it is
// an error. On the Gemini API a result is a JSON object (functionResponse's
// response), which the view passes on as its text: gemini-cli sends
// {"output": text} or {"error": message}, shepherd's own answers
// {"content": text} or {"error": message}. An object of exactly one of
// these keys with a string value is unwrapped ("error" makes it an error);
// any other text is the result as is. (A plain-text read of a file whose
// whole content is such an object is unwrapped too: an accepted ambiguity.)
func resultText(b *conv.Block) (text string, isErr bool) {
	text, isErr = b.Text, b.IsError
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") || !gjson.Valid(t) {
		return text, isErr
	}
	var key, val string
	n := 0
	ok := true
	gjson.Parse(t).ForEach(func(k, v gjson.Result) bool {
		n++
		key, val = k.Str, v.Str
		ok = n == 1 && v.Type == gjson.String
		return ok
	})
	if !ok || n != 1 {
		return text, isErr
	}
	switch key {
	case "output", "content":
		return val, isErr
	case "error":
		return val, true
	}
	return text, isErr
}
