package kit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// chatDriver speaks the OpenAI Chat Completions API.
type chatDriver struct{}

func (chatDriver) Name() string                        { return "openai_chat" }
func (chatDriver) MockAPI() string                     { return "chat" }
func (chatDriver) DefaultModel() string                { return "gpt-test" }
func (chatDriver) HistoryPath() string                 { return "messages" }
func (chatDriver) LimitPath() string                   { return "max_completion_tokens" }
func (chatDriver) StaticPaths() []string               { return []string{"tools"} }
func (chatDriver) Stops() Stops                        { return Stops{End: "stop", ToolUse: "tool_calls", Cut: "length"} }
func (chatDriver) Route(bool) string                   { return "chat_completions" }
func (chatDriver) MarksErrorResults() bool             { return false }
func (chatDriver) OptionalCallIDs() bool               { return false }
func (chatDriver) Path(string, bool) string            { return "/v1/chat/completions" }
func (chatDriver) Headers() map[string]string          { return openaiHeaders() }
func (chatDriver) ErrorShape(_ int, body []byte) error { return openaiErrorShape(body) }

func (chatDriver) SideRequest() (kind, path, value string) {
	return "json_output", "response_format", `{"type":"json_object"}`
}

// openaiHeaders are the OpenAI APIs' test credentials.
func openaiHeaders() map[string]string { return map[string]string{"Authorization": "Bearer sk-test"} }

// openaiErrorShape checks OpenAI's {"error":{"message","type"}}.
func openaiErrorShape(body []byte) error {
	if err := requireErrorMessage(body); err != nil {
		return err
	}
	e := gjson.GetBytes(body, "error")
	switch {
	case gjson.GetBytes(body, "type").Exists():
		return fmt.Errorf("openai error: top-level type present: %s", body)
	case e.Get("type").String() == "":
		return fmt.Errorf("openai error: no error.type: %s", body)
	case e.Get("status").Exists():
		return fmt.Errorf("openai error: error.status present: %s", body)
	}
	return nil
}

func (d chatDriver) Request(r Request) string {
	var b strings.Builder
	b.WriteString(`{"model":` + Quote(orDefault(r.Model, d.DefaultModel())) + `,`)
	b.WriteString(limitMember("max_completion_tokens", r.Limit))
	if r.Stream {
		b.WriteString(`"stream":true,"stream_options":{"include_usage":true},`)
	}
	if len(r.Tools) > 0 {
		var ts []string
		for _, t := range r.Tools {
			desc := ""
			if t.Description != "" {
				desc = `"description":` + Quote(t.Description) + `,`
			}
			ts = append(ts, `{"type":"function","function":{"name":`+Quote(t.Name)+`,`+desc+`"parameters":`+t.Schema+`}}`)
		}
		b.WriteString(`"tools":[` + strings.Join(ts, ",") + `],`)
	}
	hist := r.History
	if r.System != "" {
		hist = append([]string{`{"role":"system","content":` + Quote(r.System) + `}`}, hist...)
	}
	b.WriteString(`"messages":[` + strings.Join(hist, ",") + `]}`)
	return b.String()
}

func (chatDriver) User(text string) string {
	return `{"role":"user","content":` + Quote(text) + `}`
}

func (chatDriver) ToolResult(id, _, content string) string {
	return `{"role":"tool","tool_call_id":` + Quote(id) + `,"content":` + Quote(content) + `}`
}

func (chatDriver) Echo(reply []byte) []string {
	return []string{gjson.GetBytes(reply, "choices.0.message").Raw}
}

func (chatDriver) ParseReply(body []byte) (Reply, error) {
	if err := requireJSON(body); err != nil {
		return Reply{}, err
	}
	r := Reply{TextBlocks: -1}
	m := gjson.GetBytes(body, "choices.0.message")
	r.Text = m.Get("content").String()
	if rc := m.Get("reasoning_content"); rc.Exists() {
		r.Thinking = append(r.Thinking, Thinking{Text: rc.String()})
	}
	for _, c := range m.Get("tool_calls").Array() {
		r.Calls = append(r.Calls, mock.ToolCall{ID: c.Get("id").String(), Name: c.Get("function.name").String(), Args: c.Get("function.arguments").String()})
	}
	r.Stop = gjson.GetBytes(body, "choices.0.finish_reason").String()
	r.Output = gjson.GetBytes(body, "usage.completion_tokens").Int()
	return r, nil
}

func (chatDriver) ParseStream(body []byte) (Reply, error) {
	r := Reply{TextBlocks: -1}
	var reasoning strings.Builder
	calls := map[int64]*mock.ToolCall{}
	for _, e := range SSE(body) {
		if e.Data == "[DONE]" {
			continue
		}
		if !gjson.Valid(e.Data) {
			return r, fmt.Errorf("chat stream: chunk is not JSON: %q", e.Data)
		}
		if er := gjson.Get(e.Data, "error"); er.Exists() {
			return r, fmt.Errorf("chat stream: error chunk %s", e.Data)
		}
		for _, c := range gjson.Get(e.Data, "choices").Array() {
			r.Text += c.Get("delta.content").String()
			reasoning.WriteString(c.Get("delta.reasoning_content").String())
			for _, tc := range c.Get("delta.tool_calls").Array() {
				i := tc.Get("index").Int()
				call := calls[i]
				if call == nil {
					call = &mock.ToolCall{}
					calls[i] = call
				}
				if id := tc.Get("id").String(); id != "" {
					call.ID = id
				}
				call.Name += tc.Get("function.name").String()
				call.Args += tc.Get("function.arguments").String()
			}
			if f := c.Get("finish_reason").String(); f != "" {
				r.Stop = f
			}
		}
		if u := gjson.Get(e.Data, "usage"); u.IsObject() {
			r.Output = u.Get("completion_tokens").Int()
		}
	}
	if reasoning.Len() > 0 {
		r.Thinking = []Thinking{{Text: reasoning.String()}}
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		r.Calls = append(r.Calls, *calls[i])
	}
	return r, nil
}

func (chatDriver) ToolHistory(body []byte) []HistItem {
	var out []HistItem
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		for _, c := range m.Get("tool_calls").Array() {
			out = append(out, HistItem{Call: true, ID: c.Get("id").String(), Name: c.Get("function.name").String(), Args: c.Get("function.arguments").String()})
		}
		if m.Get("role").String() == "tool" {
			out = append(out, HistItem{ID: m.Get("tool_call_id").String(), Content: resultText(m.Get("content"))})
		}
	}
	return out
}

func (chatDriver) CallID(items []string, name string) (string, bool) {
	for _, it := range items {
		if id := gjson.Get(it, `tool_calls.#(function.name==`+Quote(name)+`).id`); id.Exists() {
			return id.String(), true
		}
	}
	return "", false
}

func (chatDriver) ItemText(item string) string { return contentText(gjson.Get(item, "content")) }

func (chatDriver) ThinkingRaw(items []string) []string {
	var out []string
	for _, it := range items {
		if rc := gjson.Get(it, "reasoning_content"); rc.Exists() {
			out = append(out, rc.Raw)
		}
	}
	return out
}

func (d chatDriver) Thinkings(items []string) ([]Thinking, error) {
	var out []Thinking
	for _, raw := range d.ThinkingRaw(items) {
		out = append(out, Thinking{Text: gjson.Parse(raw).String()})
	}
	return out, nil
}

func (chatDriver) RequiresLimit() bool   { return false }
func (chatDriver) Prefill() bool         { return false }
func (chatDriver) SignsThinking() bool   { return false }
func (chatDriver) SystemInHistory() bool { return true }

func (chatDriver) Serves(path string) bool { return strings.HasSuffix(path, "/v1/chat/completions") }

func (chatDriver) MinimalReply() string {
	return `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
}

func (chatDriver) DeclaredTools(body []byte) []string {
	return Strings(gjson.GetBytes(body, "tools.#.function.name"))
}

func (chatDriver) ErrorType(body []byte) string { return gjson.GetBytes(body, "error.type").String() }

func (chatDriver) StreamErrorShape(_ int, ev Event) error {
	if !gjson.Get(ev.Data, "error").Exists() {
		return fmt.Errorf("chat stream: not an error chunk: %s", ev.Data)
	}
	return nil
}

func (chatDriver) InvalidRequestType() string { return "invalid_request_error" }
