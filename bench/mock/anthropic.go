package mock

import "github.com/shepherd-proxy/shepherd/rewrite/jsonkit"

func (p *plan) anthropicStop() string {
	switch p.stop {
	case "end":
		return "end_turn"
	case "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn":
		return p.stop
	}
	return p.stop
}

func (p *plan) anthropicStopSequence(b []byte) []byte {
	if p.stop == "stop_sequence" {
		return appendStrOrNull(b, p.r.StopSequence)
	}
	return append(b, "null"...)
}

func (p *plan) anthropicUsage(b []byte, output int, tier bool) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, p.usage.Input)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, p.usage.CacheWrite)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = appendInt(b, p.usage.CacheRead)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, output)
	if tier {
		b = append(b, `,"service_tier":"standard"`...)
	}
	return append(b, '}')
}

func (p *plan) anthropicJSON() []byte {
	b := make([]byte, 0, 256+len(p.text)+len(p.text)/8)
	b = append(b, `{"id":`...)
	b = jsonkit.AppendString(b, p.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = jsonkit.AppendString(b, p.model)
	b = append(b, `,"content":[`...)
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	if t := p.thinking; t != nil {
		sep()
		b = append(b, `{"type":"thinking","thinking":`...)
		b = jsonkit.AppendString(b, t.Text)
		b = append(b, `,"signature":`...)
		b = jsonkit.AppendString(b, t.Signature)
		b = append(b, '}')
	}
	if p.text != "" {
		sep()
		b = append(b, `{"type":"text","text":`...)
		b = jsonkit.AppendString(b, p.text)
		b = append(b, '}')
	}
	for _, c := range p.calls {
		sep()
		b = append(b, `{"type":"tool_use","id":`...)
		b = jsonkit.AppendString(b, c.id)
		b = append(b, `,"name":`...)
		b = jsonkit.AppendString(b, c.name)
		b = append(b, `,"input":`...)
		b = append(b, c.obj...)
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = jsonkit.AppendString(b, p.anthropicStop())
	b = append(b, `,"stop_sequence":`...)
	b = p.anthropicStopSequence(b)
	b = append(b, `,"usage":`...)
	b = p.anthropicUsage(b, p.usage.Output, true)
	return append(b, '}')
}

func (p *plan) anthropicStream(e *events) {
	e.b = make([]byte, 0, 1024+len(p.text)*6)
	e.sse("message_start")
	e.b = append(e.b, `{"type":"message_start","message":{"id":`...)
	e.b = jsonkit.AppendString(e.b, p.id)
	e.b = append(e.b, `,"type":"message","role":"assistant","model":`...)
	e.b = jsonkit.AppendString(e.b, p.model)
	e.b = append(e.b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	e.b = p.anthropicUsage(e.b, 1, true)
	e.b = append(e.b, `}}`...)
	e.end()

	idx := 0
	start := func(block string) {
		e.sse("content_block_start")
		e.b = append(e.b, `{"type":"content_block_start","index":`...)
		e.b = appendInt(e.b, idx)
		e.b = append(e.b, `,"content_block":`...)
		e.b = append(e.b, block...)
		e.b = append(e.b, '}')
		e.end()
	}
	// delta writes a delta event; stamp records val (a stamp placeholder)
	// as a stamp slot.
	delta := func(typ, field, val string, stamp bool) {
		e.sse("content_block_delta")
		e.b = append(e.b, `{"type":"content_block_delta","index":`...)
		e.b = appendInt(e.b, idx)
		e.b = append(e.b, `,"delta":{"type":"`...)
		e.b = append(e.b, typ...)
		e.b = append(e.b, `","`...)
		e.b = append(e.b, field...)
		e.b = append(e.b, `":`...)
		if stamp {
			e.stampAt(len(e.b) + 1) // after the opening quote
		}
		e.b = jsonkit.AppendString(e.b, val)
		e.b = append(e.b, `}}`...)
		e.end()
	}
	stop := func() {
		e.sse("content_block_stop")
		e.b = append(e.b, `{"type":"content_block_stop","index":`...)
		e.b = appendInt(e.b, idx)
		e.b = append(e.b, '}')
		e.end()
		idx++
	}

	if t := p.thinking; t != nil {
		start(`{"type":"thinking","thinking":"","signature":""}`)
		for _, piece := range split(t.Text, p.chunk) {
			delta("thinking_delta", "thinking", piece, false)
		}
		if t.Signature != "" {
			delta("signature_delta", "signature", t.Signature, false)
		}
		stop()
	}
	if p.text != "" {
		start(`{"type":"text","text":""}`)
		for _, piece := range p.textPieces() {
			delta("text_delta", "text", piece, p.stamp)
		}
		stop()
	}
	for _, c := range p.calls {
		block := make([]byte, 0, 64+len(c.id)+len(c.name))
		block = append(block, `{"type":"tool_use","id":`...)
		block = jsonkit.AppendString(block, c.id)
		block = append(block, `,"name":`...)
		block = jsonkit.AppendString(block, c.name)
		block = append(block, `,"input":{}}`...)
		start(string(block))
		delta("input_json_delta", "partial_json", "", false)
		for _, piece := range split(c.obj, p.chunk) {
			delta("input_json_delta", "partial_json", piece, false)
		}
		stop()
	}

	e.sse("message_delta")
	e.b = append(e.b, `{"type":"message_delta","delta":{"stop_reason":`...)
	e.b = jsonkit.AppendString(e.b, p.anthropicStop())
	e.b = append(e.b, `,"stop_sequence":`...)
	e.b = p.anthropicStopSequence(e.b)
	e.b = append(e.b, `},"usage":`...)
	e.b = p.anthropicUsage(e.b, p.usage.Output, false)
	e.b = append(e.b, '}')
	e.end()

	e.sse("message_stop")
	e.b = append(e.b, `{"type":"message_stop"}`...)
	e.end()
}
