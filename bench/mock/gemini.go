package mock

import "github.com/shepherd-proxy/shepherd/rewrite/jsonkit"

// Gemini generateContent / streamGenerateContent. Thinking becomes thought
// parts ({"text":…,"thought":true}); the signature is sent base64-encoded as
// thoughtSignature (the SDK decodes it back to the scripted bytes), on the
// first functionCall part when there are tool calls (as Gemini 3 does) and
// otherwise on the (last) thought part. functionCall parts carry an id only
// when the ToolCall scripts one. Streams carry each text piece in its own
// chunk and all function calls in one chunk; finishReason and the full
// usageMetadata are on the last chunk.

// geminiEOL ends a Gemini SSE event: Google frames them with CRLF.
func (p *plan) geminiEOL() string {
	if p.s.opts.GeminiLF {
		return "\n\n"
	}
	return "\r\n\r\n"
}

func (p *plan) geminiFinish() string {
	switch p.stop {
	case "end", "tool_use", "stop_sequence":
		return "STOP"
	case "max_tokens":
		return "MAX_TOKENS"
	case "refusal":
		return "SAFETY"
	}
	return p.stop
}

func (p *plan) geminiUsage(b []byte, final bool) []byte {
	u := p.usage
	prompt := u.Input + u.CacheRead + u.CacheWrite
	b = append(b, `{"promptTokenCount":`...)
	b = appendInt(b, prompt)
	if final {
		b = append(b, `,"candidatesTokenCount":`...)
		b = appendInt(b, max(0, u.Output-u.Reasoning))
		b = append(b, `,"totalTokenCount":`...)
		b = appendInt(b, prompt+u.Output)
		if u.CacheRead > 0 {
			b = append(b, `,"cachedContentTokenCount":`...)
			b = appendInt(b, u.CacheRead)
		}
		if u.Reasoning > 0 {
			b = append(b, `,"thoughtsTokenCount":`...)
			b = appendInt(b, u.Reasoning)
		}
	} else {
		b = append(b, `,"totalTokenCount":`...)
		b = appendInt(b, prompt)
	}
	return append(b, '}')
}

func (p *plan) appendThought(b []byte, text string, sig bool) []byte {
	b = append(b, `{"text":`...)
	b = jsonkit.AppendString(b, text)
	b = append(b, `,"thought":true`...)
	if sig {
		b = append(b, `,"thoughtSignature":`...)
		b = jsonkit.AppendString(b, b64(p.thinking.Signature))
	}
	return append(b, '}')
}

func (p *plan) appendText(b []byte, text string) []byte {
	b = append(b, `{"text":`...)
	b = jsonkit.AppendString(b, text)
	return append(b, '}')
}

func (p *plan) appendCalls(b []byte) []byte {
	sig := p.thinking != nil && p.thinking.Signature != ""
	for i, c := range p.calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"functionCall":{`...)
		if c.id != "" {
			b = append(b, `"id":`...)
			b = jsonkit.AppendString(b, c.id)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = jsonkit.AppendString(b, c.name)
		b = append(b, `,"args":`...)
		b = append(b, c.obj...)
		b = append(b, '}')
		if i == 0 && sig {
			b = append(b, `,"thoughtSignature":`...)
			b = jsonkit.AppendString(b, b64(p.thinking.Signature))
		}
		b = append(b, '}')
	}
	return b
}

// thoughtSig reports whether the thought part carries the signature.
func (p *plan) thoughtSig() bool {
	return p.thinking != nil && p.thinking.Signature != "" && len(p.calls) == 0
}

func (p *plan) geminiOpen(b []byte) []byte {
	return append(b, `{"candidates":[{"content":{"parts":[`...)
}

func (p *plan) geminiClose(b []byte, final bool) []byte {
	b = append(b, `],"role":"model"}`...)
	if final {
		b = append(b, `,"finishReason":`...)
		b = jsonkit.AppendString(b, p.geminiFinish())
	}
	b = append(b, `,"index":0}],"usageMetadata":`...)
	b = p.geminiUsage(b, final)
	b = append(b, `,"modelVersion":`...)
	b = jsonkit.AppendString(b, p.model)
	b = append(b, `,"responseId":`...)
	b = jsonkit.AppendString(b, p.id)
	return append(b, '}')
}

func (p *plan) geminiJSON() []byte {
	b := make([]byte, 0, 512+len(p.text)+len(p.text)/8)
	b = p.geminiOpen(b)
	n := len(b)
	if p.thinking != nil {
		b = p.appendThought(b, p.thinking.Text, p.thoughtSig())
	}
	if p.text != "" {
		if len(b) > n {
			b = append(b, ',')
		}
		b = p.appendText(b, p.text)
	}
	if len(p.calls) > 0 {
		if len(b) > n {
			b = append(b, ',')
		}
		b = p.appendCalls(b)
	}
	if len(b) == n {
		b = p.appendText(b, "")
	}
	return p.geminiClose(b, true)
}

type geminiChunk struct {
	kind byte // 't' thought, 'x' text, 'f' all function calls
	text string
}

func (p *plan) geminiStream(e *events) {
	e.b = make([]byte, 0, 1024+len(p.text)*10)
	var chunks []geminiChunk
	if p.thinking != nil {
		pieces := split(p.thinking.Text, p.chunk)
		if len(pieces) == 0 {
			pieces = []string{""}
		}
		for _, s := range pieces {
			chunks = append(chunks, geminiChunk{kind: 't', text: s})
		}
	}
	for _, s := range split(p.text, p.chunk) {
		chunks = append(chunks, geminiChunk{kind: 'x', text: s})
	}
	if len(p.calls) > 0 {
		chunks = append(chunks, geminiChunk{kind: 'f'})
	}
	if len(chunks) == 0 {
		chunks = append(chunks, geminiChunk{kind: 'x'})
	}
	lastThought := -1
	for i, c := range chunks {
		if c.kind == 't' {
			lastThought = i
		}
	}
	for i, c := range chunks {
		switch {
		case p.geminiSSE:
			e.b = append(e.b, "data: "...)
		case i == 0:
			e.b = append(e.b, '[')
		default:
			e.b = append(e.b, ",\r\n"...)
		}
		e.b = p.geminiOpen(e.b)
		switch c.kind {
		case 't':
			e.b = p.appendThought(e.b, c.text, i == lastThought && p.thoughtSig())
		case 'x':
			e.b = p.appendText(e.b, c.text)
		case 'f':
			e.b = p.appendCalls(e.b)
		}
		e.b = p.geminiClose(e.b, i == len(chunks)-1)
		if p.geminiSSE {
			e.b = append(e.b, p.geminiEOL()...)
		}
		e.mark()
	}
	if !p.geminiSSE {
		e.trailer = "]"
	}
}
