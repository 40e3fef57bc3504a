package kit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Quote is s as a JSON string (no HTML escaping).
func Quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// RawList is the raw JSON of each element of an array.
func RawList(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool { out = append(out, v.Raw); return true })
	return out
}

// Strings is the string value of each element of an array (never nil).
func Strings(r gjson.Result) []string {
	out := []string{}
	for _, v := range r.Array() {
		out = append(out, v.String())
	}
	return out
}

// History is the raw items of body's conversation array on d.
func History(d Driver, body []byte) []string {
	return RawList(gjson.GetBytes(body, d.HistoryPath()))
}

// resultText flattens a tool-result content: a string, or an array of
// parts with text.
func resultText(r gjson.Result) string {
	if r.Type == gjson.String {
		return r.String()
	}
	var b strings.Builder
	for _, p := range r.Array() {
		b.WriteString(p.Get("text").String())
	}
	return b.String()
}

// contentText is the text of a message's content: a string, or the text
// of its text parts.
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.String()
	}
	var b strings.Builder
	for _, p := range c.Array() {
		if t := p.Get("type").String(); t == "" || t == "text" || t == "input_text" || t == "output_text" {
			b.WriteString(p.Get("text").String())
		}
	}
	return b.String()
}

// limitValue is the output limit a Request asks for, and whether it
// asks for one at all.
func limitValue(limit int) (int, bool) {
	switch limit {
	case 0, NoLimit:
		return 0, false
	case ZeroLimit:
		return 0, true
	}
	return limit, true
}

// limitMember is `"field":n,` or "" without a limit.
func limitMember(field string, limit int) string {
	n, ok := limitValue(limit)
	if !ok {
		return ""
	}
	return fmt.Sprintf(`"%s":%d,`, field, n)
}

// requireJSON fails unless body is valid JSON.
func requireJSON(body []byte) error {
	if !gjson.ValidBytes(body) {
		return fmt.Errorf("not JSON: %q", body)
	}
	return nil
}

// AnyDeclaredTools lists the tool names body declares in any API's shape,
// each once: for requests whose API is not known.
func AnyDeclaredTools(body []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range drivers {
		for _, n := range d.DeclaredTools(body) {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}
