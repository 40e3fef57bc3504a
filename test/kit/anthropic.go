package kit

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// anthropicDriver speaks the Anthropic Messages API.
type anthropicDriver struct{}

// anthropicDefaultLimit is max_tokens of a Request with Limit 0: the API
// requires one.
const anthropicDefaultLimit = 512

func (anthropicDriver) Name() string         { return "anthropic" }
func (anthropicDriver) MockAPI() string      { return "anthropic" }
func (anthropicDriver) DefaultModel() string { return "claude-test" }
func (anthropicDriver) HistoryPath() string  { return "messages" }
func (anthropicDriver) LimitPath() string    { return "max_tokens" }
func (anthropicDriver) StaticPaths() []string {
	return []string{"tools", "system"}
}
func (anthropicDriver) Stops() Stops {
	return Stops{End: "end_turn", ToolUse: "tool_use", Cut: "max_tokens"}
}
func (anthropicDriver) Route(bool) string        { return "messages" }
func (anthropicDriver) MarksErrorResults() bool  { return true }
func (anthropicDriver) OptionalCallIDs() bool    { return false }
func (anthropicDriver) Path(string, bool) string { return "/v1/messages" }

func (anthropicDriver) Headers() map[string]string {
	return map[string]string{"X-Api-Key": "sk-ant-test", "Anthropic-Version": "2023-06-01"}
}

func (d anthropicDriver) Request(r Request) string {
	var b strings.Builder
	b.WriteString(`{"model":` + Quote(orDefault(r.Model, d.DefaultModel())) + `,`)
	limit := r.Limit
	if limit == 0 {
		limit = anthropicDefaultLimit
	}
	b.WriteString(limitMember("max_tokens", limit))
	if r.Stream {
		b.WriteString(`"stream":true,`)
	}
	if r.System != "" {
		b.WriteString(`"system":` + Quote(r.System) + `,`)
	}
	if len(r.Tools) > 0 {
		var ts []string
		for _, t := range r.Tools {
			desc := ""
			if t.Description != "" {
				desc = `"description":` + Quote(t.Description) + `,`
			}
			ts = append(ts, `{"name":`+Quote(t.Name)+`,`+desc+`"input_schema":`+t.Schema+`}`)
		}
		b.WriteString(`"tools":[` + strings.Join(ts, ",") + `],`)
	}
	b.WriteString(`"messages":[` + strings.Join(r.History, ",") + `]}`)
	return b.String()
}

func (anthropicDriver) User(text string) string {
	return `{"role":"user","content":` + Quote(text) + `}`
}

func (anthropicDriver) ToolResult(id, _, content string) string {
	return `{"role":"user","content":[{"type":"tool_result","tool_use_id":` + Quote(id) + `,"content":` + Quote(content) + `}]}`
}

func (anthropicDriver) Echo(reply []byte) []string {
	return []string{`{"role":"assistant","content":` + gjson.GetBytes(reply, "content").Raw + `}`}
}

func (anthropicDriver) ParseReply(body []byte) (Reply, error) {
	if err := requireJSON(body); err != nil {
		return Reply{}, err
	}
	var r Reply
	for _, b := range gjson.GetBytes(body, "content").Array() {
		switch b.Get("type").String() {
		case "text":
			r.Text += b.Get("text").String()
			r.TextBlocks++
		case "thinking":
			r.Thinking = append(r.Thinking, Thinking{b.Get("thinking").String(), b.Get("signature").String()})
		case "tool_use":
			r.Calls = append(r.Calls, mock.ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(), Args: b.Get("input").Raw})
		}
	}
	r.Stop = gjson.GetBytes(body, "stop_reason").String()
	r.Output = gjson.GetBytes(body, "usage.output_tokens").Int()
	return r, nil
}

func (anthropicDriver) ParseStream(body []byte) (Reply, error) {
	var r Reply
	type block struct {
		typ, text, sig, id, name, args string
	}
	var blocks []*block
	at := func(i int64) (*block, error) {
		if i < 0 || int(i) >= len(blocks) {
			return nil, fmt.Errorf("anthropic stream: no content block %d", i)
		}
		return blocks[i], nil
	}
	for _, e := range SSE(body) {
		switch e.Name {
		case "error":
			return r, fmt.Errorf("anthropic stream: error event %s", e.Data)
		case "content_block_start":
			cb := gjson.Get(e.Data, "content_block")
			blocks = append(blocks, &block{typ: cb.Get("type").String(), text: cb.Get("text").String(),
				id: cb.Get("id").String(), name: cb.Get("name").String()})
		case "content_block_delta":
			b, err := at(gjson.Get(e.Data, "index").Int())
			if err != nil {
				return r, err
			}
			d := gjson.Get(e.Data, "delta")
			switch d.Get("type").String() {
			case "text_delta":
				b.text += d.Get("text").String()
			case "thinking_delta":
				b.text += d.Get("thinking").String()
			case "signature_delta":
				b.sig += d.Get("signature").String()
			case "input_json_delta":
				b.args += d.Get("partial_json").String()
			}
		case "message_delta":
			r.Stop = gjson.Get(e.Data, "delta.stop_reason").String()
			r.Output = gjson.Get(e.Data, "usage.output_tokens").Int()
		}
	}
	for _, b := range blocks {
		switch b.typ {
		case "text":
			r.Text += b.text
			r.TextBlocks++
		case "thinking":
			r.Thinking = append(r.Thinking, Thinking{b.text, b.sig})
		case "tool_use":
			args := b.args
			if args == "" {
				args = "{}"
			}
			r.Calls = append(r.Calls, mock.ToolCall{ID: b.id, Name: b.name, Args: args})
		}
	}
	return r, nil
}

func (anthropicDriver) ToolHistory(body []byte) []HistItem {
	var out []HistItem
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		for _, b := range m.Get("content").Array() {
			switch b.Get("type").String() {
			case "tool_use":
				out = append(out, HistItem{Call: true, ID: b.Get("id").String(), Name: b.Get("name").String(), Args: b.Get("input").Raw})
			case "tool_result":
				out = append(out, HistItem{ID: b.Get("tool_use_id").String(), Content: resultText(b.Get("content")), IsError: b.Get("is_error").Bool()})
			}
		}
	}
	return out
}

func (anthropicDriver) CallID(items []string, name string) (string, bool) {
	for _, it := range items {
		if id := gjson.Get(it, `content.#(name==`+Quote(name)+`).id`); id.Exists() {
			return id.String(), true
		}
	}
	return "", false
}

func (anthropicDriver) ItemText(item string) string { return contentText(gjson.Get(item, "content")) }

func (anthropicDriver) ThinkingRaw(items []string) []string {
	var out []string
	for _, it := range items {
		for _, b := range gjson.Get(it, "content").Array() {
			if b.Get("type").String() == "thinking" {
				out = append(out, b.Raw)
			}
		}
	}
	return out
}

func (d anthropicDriver) Thinkings(items []string) ([]Thinking, error) {
	var out []Thinking
	for _, raw := range d.ThinkingRaw(items) {
		out = append(out, Thinking{gjson.Get(raw, "thinking").String(), gjson.Get(raw, "signature").String()})
	}
	return out, nil
}

func (anthropicDriver) ErrorShape(_ int, body []byte) error {
	if err := requireErrorMessage(body); err != nil {
		return err
	}
	e := gjson.GetBytes(body, "error")
	switch {
	case gjson.GetBytes(body, "type").String() != "error":
		return fmt.Errorf("anthropic error: type is not \"error\": %s", body)
	case e.Get("type").String() == "":
		return fmt.Errorf("anthropic error: no error.type: %s", body)
	case e.Get("code").Exists():
		return fmt.Errorf("anthropic error: error.code present: %s", body)
	}
	return nil
}

func (anthropicDriver) SideRequest() (kind, path, value string) {
	return "tool_choice_none", "tool_choice", `{"type":"none"}`
}

// requireErrorMessage checks the part every API's error shares: JSON with
// a non-empty error.message.
func requireErrorMessage(body []byte) error {
	if err := requireJSON(body); err != nil {
		return err
	}
	if gjson.GetBytes(body, "error.message").String() == "" {
		return fmt.Errorf("error without message: %s", body)
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (anthropicDriver) RequiresLimit() bool   { return true }
func (anthropicDriver) Prefill() bool         { return true }
func (anthropicDriver) SignsThinking() bool   { return true }
func (anthropicDriver) SystemInHistory() bool { return false }

func (anthropicDriver) Serves(path string) bool { return strings.HasSuffix(path, "/v1/messages") }

func (anthropicDriver) MinimalReply() string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
}

func (anthropicDriver) DeclaredTools(body []byte) []string {
	return Strings(gjson.GetBytes(body, "tools.#.name"))
}

func (anthropicDriver) ErrorType(body []byte) string {
	return gjson.GetBytes(body, "error.type").String()
}

func (anthropicDriver) StreamErrorShape(_ int, ev Event) error {
	if ev.Name != "error" || gjson.Get(ev.Data, "type").String() != "error" || !gjson.Get(ev.Data, "error").Exists() {
		return fmt.Errorf("anthropic stream: not an error event: %s %s", ev.Name, ev.Data)
	}
	return nil
}

func (anthropicDriver) InvalidRequestType() string { return "invalid_request_error" }
