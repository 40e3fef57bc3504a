package mock

import (
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// OpenAI Responses API. Output items, in order: a reasoning item (Thinking:
// summary text, signature as encrypted_content), a message item (Text), one
// function_call item per tool call, or a custom_tool_call item for a
// ToolCall with Custom set. Ids: rs_<key>, msg_<key>, fc_<key>_<i> (custom:
// ctc_<key>_<i>), call_<key>_<i>.

type respItem struct {
	kind  byte // 'r' reasoning, 'm' message, 'f' function call, 'c' custom tool call
	id    string
	call  *call
	input string // a custom call's input text, verbatim
	index int    // output_index
}

func (p *plan) respItems() []respItem {
	items := make([]respItem, 0, 2+len(p.calls))
	if p.thinking != nil {
		items = append(items, respItem{kind: 'r', id: "rs_" + p.key})
	}
	if p.text != "" {
		items = append(items, respItem{kind: 'm', id: "msg_" + p.key})
	}
	for i := range p.calls {
		if tc := &p.r.ToolCalls[i]; tc.Custom {
			items = append(items, respItem{kind: 'c', id: "ctc_" + p.key + "_" + strconv.Itoa(i), call: &p.calls[i], input: tc.Args})
			continue
		}
		items = append(items, respItem{kind: 'f', id: "fc_" + p.key + "_" + strconv.Itoa(i), call: &p.calls[i]})
	}
	for i := range items {
		items[i].index = i
	}
	return items
}

// respStatus returns the terminal status and incomplete reason.
func (p *plan) respStatus() (status, reason string) {
	switch p.stop {
	case "max_tokens":
		return "incomplete", "max_output_tokens"
	case "refusal":
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// appendItem writes an output item; done selects its final form.
func (p *plan) appendItem(b []byte, it *respItem, done, last bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
		if st, _ := p.respStatus(); st == "incomplete" && last {
			status = "incomplete"
		}
	}
	b = append(b, `{"id":`...)
	b = jsonkit.AppendString(b, it.id)
	switch it.kind {
	case 'r':
		b = append(b, `,"type":"reasoning","summary":[`...)
		if done && p.thinking.Text != "" {
			b = append(b, `{"type":"summary_text","text":`...)
			b = jsonkit.AppendString(b, p.thinking.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
		if done && p.thinking.Signature != "" {
			b = append(b, `,"encrypted_content":`...)
			b = jsonkit.AppendString(b, p.thinking.Signature)
		}
	case 'm':
		b = append(b, `,"type":"message","status":"`...)
		b = append(b, status...)
		b = append(b, `","content":[`...)
		if done {
			b = p.appendTextPart(b, p.text)
		}
		b = append(b, `],"role":"assistant"`...)
	case 'f':
		b = append(b, `,"type":"function_call","status":"`...)
		b = append(b, status...)
		b = append(b, `","arguments":`...)
		if done {
			b = jsonkit.AppendString(b, it.call.args)
		} else {
			b = append(b, `""`...)
		}
		b = append(b, `,"call_id":`...)
		b = jsonkit.AppendString(b, it.call.id)
		b = append(b, `,"name":`...)
		b = jsonkit.AppendString(b, it.call.name)
	case 'c':
		b = append(b, `,"type":"custom_tool_call","status":"`...)
		b = append(b, status...)
		b = append(b, `","call_id":`...)
		b = jsonkit.AppendString(b, it.call.id)
		b = append(b, `,"input":`...)
		if done {
			b = jsonkit.AppendString(b, it.input)
		} else {
			b = append(b, `""`...)
		}
		b = append(b, `,"name":`...)
		b = jsonkit.AppendString(b, it.call.name)
	}
	return append(b, '}')
}

func (p *plan) appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = jsonkit.AppendString(b, text)
	return append(b, '}')
}

// appendResponse writes the response object; final selects the terminal
// form (status, output, usage) over the in-progress one.
func (p *plan) appendResponse(b []byte, items []respItem, final bool) []byte {
	status, reason := "in_progress", ""
	if final {
		status, reason = p.respStatus()
	}
	b = append(b, `{"id":`...)
	b = jsonkit.AppendString(b, p.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, p.created, 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","background":false,"error":null,"incomplete_details":`...)
	if reason != "" {
		b = append(b, `{"reason":"`...)
		b = append(b, reason...)
		b = append(b, `"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":null,"max_output_tokens":null,"model":`...)
	b = jsonkit.AppendString(b, p.model)
	b = append(b, `,"output":[`...)
	if final {
		for i := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = p.appendItem(b, &items[i], true, i == len(items)-1)
		}
	}
	b = append(b, `],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":`...)
	if final {
		u := p.usage
		prompt := u.Input + u.CacheRead + u.CacheWrite
		b = append(b, `{"input_tokens":`...)
		b = appendInt(b, prompt)
		b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, u.CacheRead)
		b = append(b, `},"output_tokens":`...)
		b = appendInt(b, u.Output)
		b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
		b = appendInt(b, u.Reasoning)
		b = append(b, `},"total_tokens":`...)
		b = appendInt(b, prompt+u.Output)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"user":null,"metadata":{}}`...)
}

func (p *plan) responsesJSON() []byte {
	b := make([]byte, 0, 1024+len(p.text)+len(p.text)/8)
	return p.appendResponse(b, p.respItems(), true)
}

func (p *plan) responsesStream(e *events) {
	e.b = make([]byte, 0, 2048+len(p.text)*8)
	items := p.respItems()
	// open starts event typ; its sequence_number is its position in the stream.
	open := func(typ string) {
		e.sse(typ)
		e.b = append(e.b, `{"type":"`...)
		e.b = append(e.b, typ...)
		e.b = append(e.b, `","sequence_number":`...)
		e.b = appendInt(e.b, len(e.ends))
	}
	at := func(it *respItem) {
		e.b = append(e.b, `,"item_id":`...)
		e.b = jsonkit.AppendString(e.b, it.id)
		e.b = append(e.b, `,"output_index":`...)
		e.b = appendInt(e.b, it.index)
	}
	closeEv := func() {
		e.b = append(e.b, '}')
		e.end()
	}
	itemEvent := func(typ string, it *respItem, done bool) {
		open(typ)
		e.b = append(e.b, `,"output_index":`...)
		e.b = appendInt(e.b, it.index)
		e.b = append(e.b, `,"item":`...)
		e.b = p.appendItem(e.b, it, done, it.index == len(items)-1)
		closeEv()
	}

	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		open(typ)
		e.b = append(e.b, `,"response":`...)
		e.b = p.appendResponse(e.b, items, false)
		closeEv()
	}
	for i := range items {
		it := &items[i]
		itemEvent("response.output_item.added", it, false)
		switch it.kind {
		case 'r':
			if t := p.thinking.Text; t != "" {
				part := func(typ, text string) {
					open(typ)
					at(it)
					e.b = append(e.b, `,"summary_index":0,"part":{"type":"summary_text","text":`...)
					e.b = jsonkit.AppendString(e.b, text)
					e.b = append(e.b, '}')
					closeEv()
				}
				part("response.reasoning_summary_part.added", "")
				for _, piece := range split(t, p.chunk) {
					open("response.reasoning_summary_text.delta")
					at(it)
					e.b = append(e.b, `,"summary_index":0,"delta":`...)
					e.b = jsonkit.AppendString(e.b, piece)
					closeEv()
				}
				open("response.reasoning_summary_text.done")
				at(it)
				e.b = append(e.b, `,"summary_index":0,"text":`...)
				e.b = jsonkit.AppendString(e.b, t)
				closeEv()
				part("response.reasoning_summary_part.done", t)
			}
		case 'm':
			part := func(typ, text string) {
				open(typ)
				at(it)
				e.b = append(e.b, `,"content_index":0,"part":`...)
				e.b = p.appendTextPart(e.b, text)
				closeEv()
			}
			part("response.content_part.added", "")
			for _, piece := range split(p.text, p.chunk) {
				open("response.output_text.delta")
				at(it)
				e.b = append(e.b, `,"content_index":0,"delta":`...)
				e.b = jsonkit.AppendString(e.b, piece)
				e.b = append(e.b, `,"logprobs":[]`...)
				closeEv()
			}
			open("response.output_text.done")
			at(it)
			e.b = append(e.b, `,"content_index":0,"text":`...)
			e.b = jsonkit.AppendString(e.b, p.text)
			e.b = append(e.b, `,"logprobs":[]`...)
			closeEv()
			part("response.content_part.done", p.text)
		case 'f':
			for _, piece := range split(it.call.args, p.chunk) {
				open("response.function_call_arguments.delta")
				at(it)
				e.b = append(e.b, `,"delta":`...)
				e.b = jsonkit.AppendString(e.b, piece)
				closeEv()
			}
			open("response.function_call_arguments.done")
			at(it)
			e.b = append(e.b, `,"name":`...)
			e.b = jsonkit.AppendString(e.b, it.call.name)
			e.b = append(e.b, `,"arguments":`...)
			e.b = jsonkit.AppendString(e.b, it.call.args)
			closeEv()
		case 'c':
			for _, piece := range split(it.input, p.chunk) {
				open("response.custom_tool_call_input.delta")
				at(it)
				e.b = append(e.b, `,"delta":`...)
				e.b = jsonkit.AppendString(e.b, piece)
				closeEv()
			}
			open("response.custom_tool_call_input.done")
			at(it)
			e.b = append(e.b, `,"input":`...)
			e.b = jsonkit.AppendString(e.b, it.input)
			closeEv()
		}
		itemEvent("response.output_item.done", it, true)
	}
	terminal := "response.completed"
	if st, _ := p.respStatus(); st == "incomplete" {
		terminal = "response.incomplete"
	}
	open(terminal)
	e.b = append(e.b, `,"response":`...)
	e.b = p.appendResponse(e.b, items, true)
	closeEv()
}
