package kit

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// responsesDriver speaks the OpenAI Responses API (stateless: store false,
// the whole history in input).
type responsesDriver struct{}

func (responsesDriver) Name() string          { return "openai_responses" }
func (responsesDriver) MockAPI() string       { return "responses" }
func (responsesDriver) DefaultModel() string  { return "gpt-test" }
func (responsesDriver) HistoryPath() string   { return "input" }
func (responsesDriver) LimitPath() string     { return "max_output_tokens" }
func (responsesDriver) StaticPaths() []string { return []string{"tools", "instructions"} }

// Stops: Responses has no stop reason; a turn ending in function calls is
// a completed response like any other.
func (responsesDriver) Stops() Stops {
	return Stops{End: "completed", ToolUse: "completed", Cut: "incomplete", CutDetail: "max_output_tokens"}
}
func (responsesDriver) Route(bool) string                   { return "responses" }
func (responsesDriver) MarksErrorResults() bool             { return false }
func (responsesDriver) OptionalCallIDs() bool               { return false }
func (responsesDriver) Path(string, bool) string            { return "/v1/responses" }
func (responsesDriver) Headers() map[string]string          { return openaiHeaders() }
func (responsesDriver) ErrorShape(_ int, body []byte) error { return openaiErrorShape(body) }

func (responsesDriver) SideRequest() (kind, path, value string) {
	return "json_output", "text", `{"format":{"type":"json_schema","name":"route","schema":{"type":"object"}}}`
}

func (d responsesDriver) Request(r Request) string {
	var b strings.Builder
	b.WriteString(`{"model":` + Quote(orDefault(r.Model, d.DefaultModel())) + `,`)
	if r.System != "" {
		b.WriteString(`"instructions":` + Quote(r.System) + `,`)
	}
	b.WriteString(`"store":false,`)
	b.WriteString(limitMember("max_output_tokens", r.Limit))
	if r.Stream {
		b.WriteString(`"stream":true,`)
	}
	if len(r.Tools) > 0 {
		var ts []string
		for _, t := range r.Tools {
			desc := ""
			if t.Description != "" {
				desc = `"description":` + Quote(t.Description) + `,`
			}
			ts = append(ts, `{"type":"function","name":`+Quote(t.Name)+`,`+desc+`"parameters":`+t.Schema+`}`)
		}
		b.WriteString(`"tools":[` + strings.Join(ts, ",") + `],`)
	}
	b.WriteString(`"input":[` + strings.Join(r.History, ",") + `]}`)
	return b.String()
}

func (responsesDriver) User(text string) string {
	return `{"role":"user","content":` + Quote(text) + `}`
}

func (responsesDriver) ToolResult(id, _, content string) string {
	return `{"type":"function_call_output","call_id":` + Quote(id) + `,"output":` + Quote(content) + `}`
}

func (responsesDriver) Echo(reply []byte) []string { return RawList(gjson.GetBytes(reply, "output")) }

func (responsesDriver) ParseReply(body []byte) (Reply, error) {
	if err := requireJSON(body); err != nil {
		return Reply{}, err
	}
	return responsesReply(gjson.ParseBytes(body)), nil
}

// responsesReply reads a response object.
func responsesReply(resp gjson.Result) Reply {
	var r Reply
	for _, it := range resp.Get("output").Array() {
		switch it.Get("type").String() {
		case "message":
			r.TextBlocks++
			for _, p := range it.Get("content").Array() {
				r.Text += p.Get("text").String()
			}
		case "reasoning":
			r.Thinking = append(r.Thinking, reasoningThinking(it))
		case "function_call":
			r.Calls = append(r.Calls, mock.ToolCall{ID: it.Get("call_id").String(), Name: it.Get("name").String(), Args: it.Get("arguments").String()})
		}
	}
	r.Stop = resp.Get("status").String()
	r.Incomplete = resp.Get("incomplete_details.reason").String()
	r.Output = resp.Get("usage.output_tokens").Int()
	return r
}

// reasoningThinking reads a reasoning item: its summary text and
// encrypted_content.
func reasoningThinking(it gjson.Result) Thinking {
	var s strings.Builder
	for _, p := range it.Get("summary").Array() {
		s.WriteString(p.Get("text").String())
	}
	return Thinking{s.String(), it.Get("encrypted_content").String()}
}

// ParseStream reads the response of the stream's terminal event
// (response.completed, .incomplete or .failed).
func (responsesDriver) ParseStream(body []byte) (Reply, error) {
	var final gjson.Result
	for _, e := range SSE(body) {
		switch typ := gjson.Get(e.Data, "type").String(); typ {
		case "error":
			return Reply{}, fmt.Errorf("responses stream: error event %s", e.Data)
		case "response.completed", "response.incomplete", "response.failed":
			final = gjson.Get(e.Data, "response")
		}
	}
	if !final.Exists() {
		return Reply{}, fmt.Errorf("responses stream: no terminal event")
	}
	return responsesReply(final), nil
}

func (responsesDriver) ToolHistory(body []byte) []HistItem {
	var out []HistItem
	for _, it := range gjson.GetBytes(body, "input").Array() {
		switch it.Get("type").String() {
		case "function_call":
			out = append(out, HistItem{Call: true, ID: it.Get("call_id").String(), Name: it.Get("name").String(), Args: it.Get("arguments").String()})
		case "function_call_output":
			out = append(out, HistItem{ID: it.Get("call_id").String(), Content: resultText(it.Get("output"))})
		}
	}
	return out
}

func (responsesDriver) CallID(items []string, name string) (string, bool) {
	for _, it := range items {
		if gjson.Get(it, "name").String() == name {
			return gjson.Get(it, "call_id").String(), true
		}
	}
	return "", false
}

func (responsesDriver) ItemText(item string) string {
	if gjson.Get(item, "type").String() == "reasoning" {
		return ""
	}
	return contentText(gjson.Get(item, "content"))
}

func (responsesDriver) ThinkingRaw(items []string) []string {
	var out []string
	for _, it := range items {
		if gjson.Get(it, "type").String() == "reasoning" {
			out = append(out, it)
		}
	}
	return out
}

func (d responsesDriver) Thinkings(items []string) ([]Thinking, error) {
	var out []Thinking
	for _, raw := range d.ThinkingRaw(items) {
		out = append(out, reasoningThinking(gjson.Parse(raw)))
	}
	return out, nil
}

func (responsesDriver) RequiresLimit() bool   { return false }
func (responsesDriver) Prefill() bool         { return false }
func (responsesDriver) SignsThinking() bool   { return true }
func (responsesDriver) SystemInHistory() bool { return false }

func (responsesDriver) Serves(path string) bool { return strings.HasSuffix(path, "/v1/responses") }

func (responsesDriver) MinimalReply() string {
	return `{"id":"r1","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"m1",` +
		`"role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}],` +
		`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`
}

func (responsesDriver) DeclaredTools(body []byte) []string {
	return Strings(gjson.GetBytes(body, "tools.#.name"))
}

func (responsesDriver) ErrorType(body []byte) string {
	return gjson.GetBytes(body, "error.type").String()
}

func (responsesDriver) StreamErrorShape(_ int, ev Event) error {
	if ev.Name != "error" || gjson.Get(ev.Data, "type").String() != "error" || !gjson.Get(ev.Data, "message").Exists() {
		return fmt.Errorf("responses stream: not an error event: %s %s", ev.Name, ev.Data)
	}
	return nil
}

func (responsesDriver) InvalidRequestType() string { return "invalid_request_error" }
