package mock

import (
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// Chat Completions has no standard reasoning field; the mock sends
// Thinking.Text as reasoning_content (the DeepSeek / vLLM convention), which
// the official SDK keeps as an extra field, and drops the signature.

func (p *plan) chatFinish() string {
	switch p.stop {
	case "end", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return p.stop
}

func (p *plan) chatUsage(b []byte) []byte {
	u := p.usage
	prompt := u.Input + u.CacheRead + u.CacheWrite
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, prompt)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, u.Output)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, prompt+u.Output)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, u.CacheRead)
	b = append(b, `,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, u.Reasoning)
	b = append(b, `,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
	return b
}

func (p *plan) chatHead(b []byte, object string) []byte {
	b = append(b, `{"id":`...)
	b = jsonkit.AppendString(b, p.id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, p.created, 10)
	b = append(b, `,"model":`...)
	b = jsonkit.AppendString(b, p.model)
	return b
}

func (p *plan) chatJSON() []byte {
	b := make([]byte, 0, 512+len(p.text)+len(p.text)/8)
	b = p.chatHead(b, "chat.completion")
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if p.text == "" && len(p.calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsonkit.AppendString(b, p.text)
	}
	if p.thinking != nil {
		b = append(b, `,"reasoning_content":`...)
		b = jsonkit.AppendString(b, p.thinking.Text)
	}
	b = append(b, `,"refusal":null,"annotations":[]`...)
	if len(p.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range p.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonkit.AppendString(b, c.id)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonkit.AppendString(b, c.name)
			b = append(b, `,"arguments":`...)
			b = jsonkit.AppendString(b, c.args)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = jsonkit.AppendString(b, p.chatFinish())
	b = append(b, `}],"usage":`...)
	b = p.chatUsage(b)
	b = append(b, `,"service_tier":"default","system_fingerprint":null}`...)
	return b
}

func (p *plan) chatStream(e *events) {
	e.b = make([]byte, 0, 1024+len(p.text)*10)
	head := p.chatHead(nil, "chat.completion.chunk")
	open := func() {
		e.sse("")
		e.b = append(e.b, head...)
		e.b = append(e.b, `,"choices":[{"index":0,"delta":`...)
	}
	closeChunk := func(finish string) {
		e.b = append(e.b, `,"logprobs":null,"finish_reason":`...)
		e.b = appendStrOrNull(e.b, finish)
		e.b = append(e.b, `}]`...)
		if p.includeUsage {
			e.b = append(e.b, `,"usage":null`...)
		}
		e.b = append(e.b, '}')
		e.end()
	}
	textChunk := func(field, s string, stamp bool) {
		open()
		e.b = append(e.b, `{"`...)
		e.b = append(e.b, field...)
		e.b = append(e.b, `":`...)
		if stamp {
			e.stampAt(len(e.b) + 1) // after the opening quote
		}
		e.b = jsonkit.AppendString(e.b, s)
		e.b = append(e.b, '}')
		closeChunk("")
	}

	open()
	e.b = append(e.b, `{"role":"assistant","content":"","refusal":null}`...)
	closeChunk("")
	if p.thinking != nil {
		for _, piece := range split(p.thinking.Text, p.chunk) {
			textChunk("reasoning_content", piece, false)
		}
	}
	for _, piece := range p.textPieces() {
		textChunk("content", piece, p.stamp)
	}
	for i, c := range p.calls {
		open()
		e.b = append(e.b, `{"tool_calls":[{"index":`...)
		e.b = appendInt(e.b, i)
		e.b = append(e.b, `,"id":`...)
		e.b = jsonkit.AppendString(e.b, c.id)
		e.b = append(e.b, `,"type":"function","function":{"name":`...)
		e.b = jsonkit.AppendString(e.b, c.name)
		e.b = append(e.b, `,"arguments":""}}]}`...)
		closeChunk("")
		for _, piece := range split(c.args, p.chunk) {
			open()
			e.b = append(e.b, `{"tool_calls":[{"index":`...)
			e.b = appendInt(e.b, i)
			e.b = append(e.b, `,"function":{"arguments":`...)
			e.b = jsonkit.AppendString(e.b, piece)
			e.b = append(e.b, `}}]}`...)
			closeChunk("")
		}
	}
	open()
	e.b = append(e.b, `{}`...)
	closeChunk(p.chatFinish())

	if p.includeUsage {
		e.sse("")
		e.b = append(e.b, head...)
		e.b = append(e.b, `,"choices":[],"usage":`...)
		e.b = p.chatUsage(e.b)
		e.b = append(e.b, '}')
		e.end()
	}
	e.sse("")
	e.b = append(e.b, "[DONE]"...)
	e.end()
}
