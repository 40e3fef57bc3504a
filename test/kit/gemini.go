package kit

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// geminiDriver speaks the Gemini generateContent API; the model is in the
// path and a stream is asked for by path (SSE framing).
type geminiDriver struct{}

func (geminiDriver) Name() string          { return "gemini" }
func (geminiDriver) MockAPI() string       { return "gemini" }
func (geminiDriver) DefaultModel() string  { return "gemini-test" }
func (geminiDriver) HistoryPath() string   { return "contents" }
func (geminiDriver) LimitPath() string     { return "generationConfig.maxOutputTokens" }
func (geminiDriver) StaticPaths() []string { return []string{"tools", "systemInstruction"} }

// Stops: Gemini reports STOP after function calls too.
func (geminiDriver) Stops() Stops            { return Stops{End: "STOP", ToolUse: "STOP", Cut: "MAX_TOKENS"} }
func (geminiDriver) MarksErrorResults() bool { return true }
func (geminiDriver) OptionalCallIDs() bool   { return true }

func (geminiDriver) Route(stream bool) string {
	if stream {
		return "stream_generate_content"
	}
	return "generate_content"
}

func (d geminiDriver) Path(model string, stream bool) string {
	model = orDefault(model, d.DefaultModel())
	if stream {
		return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
	}
	return "/v1beta/models/" + model + ":generateContent"
}

func (geminiDriver) Headers() map[string]string { return map[string]string{"X-Goog-Api-Key": "g-test"} }

func (geminiDriver) SideRequest() (kind, path, value string) {
	return "json_output", "generationConfig", `{"responseMimeType":"application/json"}`
}

// Request renders r; the model and the stream flag are in the path.
func (geminiDriver) Request(r Request) string {
	var b strings.Builder
	b.WriteString(`{`)
	if r.System != "" {
		b.WriteString(`"systemInstruction":{"parts":[{"text":` + Quote(r.System) + `}]},`)
	}
	if len(r.Tools) > 0 {
		var ts []string
		for _, t := range r.Tools {
			desc := ""
			if t.Description != "" {
				desc = `"description":` + Quote(t.Description) + `,`
			}
			ts = append(ts, `{"name":`+Quote(t.Name)+`,`+desc+`"parameters":`+t.Schema+`}`)
		}
		b.WriteString(`"tools":[{"functionDeclarations":[` + strings.Join(ts, ",") + `]}],`)
	}
	if n, ok := limitValue(r.Limit); ok {
		fmt.Fprintf(&b, `"generationConfig":{"maxOutputTokens":%d},`, n)
	}
	b.WriteString(`"contents":[` + strings.Join(r.History, ",") + `]}`)
	return b.String()
}

func (geminiDriver) User(text string) string {
	return `{"role":"user","parts":[{"text":` + Quote(text) + `}]}`
}

func (geminiDriver) ToolResult(id, name, content string) string {
	return `{"role":"user","parts":[{"functionResponse":{"id":` + Quote(id) + `,"name":` + Quote(name) +
		`,"response":{"content":` + Quote(content) + `}}}]}`
}

func (geminiDriver) Echo(reply []byte) []string {
	return []string{gjson.GetBytes(reply, "candidates.0.content").Raw}
}

// thoughtOf reads a thought part, its signature base64-decoded.
func thoughtOf(p gjson.Result) (Thinking, error) {
	sig, err := base64.StdEncoding.DecodeString(p.Get("thoughtSignature").String())
	if err != nil {
		return Thinking{}, fmt.Errorf("gemini: thoughtSignature: %w", err)
	}
	return Thinking{p.Get("text").String(), string(sig)}, nil
}

// addThought appends th to ts, joined to the previous thought when that
// one was the previous part and has no signature yet (a stream's chunks of
// one thought).
func addThought(ts []Thinking, th Thinking, prevThought bool) []Thinking {
	if n := len(ts); n > 0 && prevThought && ts[n-1].Sig == "" {
		ts[n-1].Text += th.Text
		ts[n-1].Sig = th.Sig
		return ts
	}
	return append(ts, th)
}

func (geminiDriver) ParseReply(body []byte) (Reply, error) {
	if err := requireJSON(body); err != nil {
		return Reply{}, err
	}
	var r Reply
	for _, p := range gjson.GetBytes(body, "candidates.0.content.parts").Array() {
		switch {
		case p.Get("functionCall").Exists():
			fc := p.Get("functionCall")
			r.Calls = append(r.Calls, mock.ToolCall{ID: fc.Get("id").String(), Name: fc.Get("name").String(), Args: fc.Get("args").Raw})
		case p.Get("thought").Bool():
			th, err := thoughtOf(p)
			if err != nil {
				return r, err
			}
			r.Thinking = append(r.Thinking, th)
		case p.Get("text").Exists():
			r.Text += p.Get("text").String()
			r.TextBlocks++
		}
	}
	r.Stop = gjson.GetBytes(body, "candidates.0.finishReason").String()
	r.Output = gjson.GetBytes(body, "usageMetadata.candidatesTokenCount").Int()
	return r, nil
}

// ParseStream reads an SSE stream or a JSON array of chunks.
func (geminiDriver) ParseStream(body []byte) (Reply, error) {
	var chunks []string
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if !gjson.ValidBytes(t) {
			return Reply{}, fmt.Errorf("gemini stream: the array is not JSON")
		}
		chunks = RawList(gjson.ParseBytes(t))
	} else {
		for _, e := range SSE(body) {
			chunks = append(chunks, e.Data)
		}
	}
	r := Reply{TextBlocks: -1}
	prevThought := false
	for _, c := range chunks {
		if e := gjson.Get(c, "error"); e.Exists() {
			return r, fmt.Errorf("gemini stream: error chunk %s", c)
		}
		for _, p := range gjson.Get(c, "candidates.0.content.parts").Array() {
			thought := false
			switch {
			case p.Get("functionCall").Exists():
				fc := p.Get("functionCall")
				r.Calls = append(r.Calls, mock.ToolCall{ID: fc.Get("id").String(), Name: fc.Get("name").String(), Args: fc.Get("args").Raw})
			case p.Get("thought").Bool():
				th, err := thoughtOf(p)
				if err != nil {
					return r, err
				}
				r.Thinking = addThought(r.Thinking, th, prevThought)
				thought = true
			default:
				r.Text += p.Get("text").String()
			}
			prevThought = thought
		}
		if f := gjson.Get(c, "candidates.0.finishReason").String(); f != "" {
			r.Stop = f
		}
		if u := gjson.Get(c, "usageMetadata.candidatesTokenCount"); u.Exists() {
			r.Output = u.Int()
		}
	}
	return r, nil
}

func (geminiDriver) ToolHistory(body []byte) []HistItem {
	var out []HistItem
	for _, c := range gjson.GetBytes(body, "contents").Array() {
		for _, p := range c.Get("parts").Array() {
			if fc := p.Get("functionCall"); fc.Exists() {
				out = append(out, HistItem{Call: true, ID: fc.Get("id").String(), Name: fc.Get("name").String(), Args: fc.Get("args").Raw})
			}
			if fr := p.Get("functionResponse"); fr.Exists() {
				it := HistItem{ID: fr.Get("id").String(), Name: fr.Get("name").String()}
				if e := fr.Get("response.error"); e.Exists() {
					it.Content, it.IsError = e.String(), true
				} else {
					it.Content = fr.Get("response.content").String()
				}
				out = append(out, it)
			}
		}
	}
	return out
}

func (geminiDriver) CallID(items []string, name string) (string, bool) {
	for _, it := range items {
		if fc := gjson.Get(it, `parts.#(functionCall.name==`+Quote(name)+`).functionCall`); fc.Exists() {
			return fc.Get("id").String(), true
		}
	}
	return "", false
}

func (geminiDriver) ItemText(item string) string {
	var b strings.Builder
	for _, p := range gjson.Get(item, "parts").Array() {
		if !p.Get("thought").Bool() {
			b.WriteString(p.Get("text").String())
		}
	}
	return b.String()
}

func (geminiDriver) ThinkingRaw(items []string) []string {
	var out []string
	for _, it := range items {
		for _, p := range gjson.Get(it, "parts").Array() {
			if p.Get("thought").Bool() {
				out = append(out, p.Raw)
			}
		}
	}
	return out
}

// Thinkings joins consecutive thought parts of one item (a stream's
// chunks) into one thought.
func (geminiDriver) Thinkings(items []string) ([]Thinking, error) {
	var out []Thinking
	for _, it := range items {
		prevThought := false
		for _, p := range gjson.Get(it, "parts").Array() {
			if !p.Get("thought").Bool() {
				prevThought = false
				continue
			}
			th, err := thoughtOf(p)
			if err != nil {
				return out, err
			}
			out = addThought(out, th, prevThought)
			prevThought = true
		}
	}
	return out, nil
}

func (geminiDriver) ErrorShape(status int, body []byte) error {
	if err := requireErrorMessage(body); err != nil {
		return err
	}
	e := gjson.GetBytes(body, "error")
	switch {
	case e.Get("code").Int() != int64(status):
		return fmt.Errorf("gemini error: error.code is not %d: %s", status, body)
	case e.Get("status").String() == "":
		return fmt.Errorf("gemini error: no error.status: %s", body)
	}
	return nil
}

func (geminiDriver) RequiresLimit() bool   { return false }
func (geminiDriver) Prefill() bool         { return false }
func (geminiDriver) SignsThinking() bool   { return true }
func (geminiDriver) SystemInHistory() bool { return false }

func (geminiDriver) Serves(path string) bool { return strings.Contains(path, ":generateContent") }

func (geminiDriver) MinimalReply() string {
	return `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`
}

func (geminiDriver) DeclaredTools(body []byte) []string {
	return Strings(gjson.GetBytes(body, "tools.#.functionDeclarations.#.name|@flatten"))
}

func (geminiDriver) ErrorType(body []byte) string {
	return gjson.GetBytes(body, "error.status").String()
}

func (geminiDriver) StreamErrorShape(status int, ev Event) error {
	if gjson.Get(ev.Data, "error.code").Int() != int64(status) {
		return fmt.Errorf("gemini stream: not an error chunk with code %d: %s", status, ev.Data)
	}
	return nil
}

func (geminiDriver) InvalidRequestType() string { return "INVALID_ARGUMENT" }
