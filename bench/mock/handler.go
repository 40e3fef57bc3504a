package mock

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
)

const scriptHeader = "X-Mock-Script"

type apiKind uint8

const (
	apiAnthropic apiKind = iota
	apiChat
	apiResponses
	apiGemini
)

var apiNames = [...]string{"anthropic", "chat", "responses", "gemini"}

// plan is one model request resolved against its Reply: everything the
// renderers need, computed once.
type plan struct {
	s            *Server
	api          apiKind
	stream       bool
	geminiSSE    bool // Gemini stream framed as SSE rather than a JSON array
	includeUsage bool // Chat stream_options.include_usage
	model        string
	key          string // id stem: Reply.ID or "mock000001"
	id           string // top-level id
	r            *Reply
	text         string
	thinking     *Thinking
	calls        []call
	stop         string // neutral stop reason
	usage        Usage
	chunk        int
	created      int64
	stamp        bool // Options.StampText on a stream that supports it
}

type call struct {
	id   string // scripted or derived id for the API
	name string
	args string // verbatim arguments text
	obj  string // compact JSON object for APIs that embed an object
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	post := ctx.IsPost()
	switch {
	case post && string(path) == "/v1/messages":
		s.serveModel(ctx, apiAnthropic, "", gjson.GetBytes(ctx.PostBody(), "stream").Bool(), false)
	case post && string(path) == "/v1/chat/completions":
		s.serveModel(ctx, apiChat, "", gjson.GetBytes(ctx.PostBody(), "stream").Bool(), false)
	case post && string(path) == "/v1/responses":
		s.serveModel(ctx, apiResponses, "", gjson.GetBytes(ctx.PostBody(), "stream").Bool(), false)
	case post && string(path) == "/v1/messages/count_tokens":
		s.record(ctx, "anthropic_count_tokens", false)
		b := append(make([]byte, 0, 32), `{"input_tokens":`...)
		b = appendInt(b, s.countTokens(ctx.PostBody()))
		b = append(b, '}')
		ctx.Response.Header.Set("Request-Id", "req_mockcount")
		writeJSON(ctx, 200, b)
	case post && isGeminiModelPath(path):
		model, method, _ := strings.Cut(string(path[bytes.Index(path, []byte("/models/"))+len("/models/"):]), ":")
		switch method {
		case "generateContent":
			s.serveModel(ctx, apiGemini, model, false, false)
		case "streamGenerateContent":
			s.serveModel(ctx, apiGemini, model, true, string(ctx.QueryArgs().Peek("alt")) == "sse")
		case "countTokens":
			s.record(ctx, "gemini_count_tokens", false)
			b := append(make([]byte, 0, 32), `{"totalTokens":`...)
			b = appendInt(b, s.countTokens(ctx.PostBody()))
			b = append(b, '}')
			writeJSON(ctx, 200, b)
		default:
			s.notFound(ctx)
		}
	case ctx.IsGet() && (string(path) == "/v1/models" || string(path) == "/v1beta/models"):
		s.record(ctx, "models", false)
		s.serveModels(ctx, string(path) == "/v1beta/models")
	default:
		s.notFound(ctx)
	}
}

func isGeminiModelPath(p []byte) bool {
	return (bytes.HasPrefix(p, []byte("/v1beta/models/")) || bytes.HasPrefix(p, []byte("/v1/models/"))) &&
		bytes.IndexByte(p, ':') > 0
}

func (s *Server) countTokens(body []byte) int {
	if s.opts.CountTokens > 0 {
		return s.opts.CountTokens
	}
	return max(1, len(body)/4)
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

func (s *Server) notFound(ctx *fasthttp.RequestCtx) {
	s.record(ctx, "", false)
	path := ctx.Path()
	api := apiChat
	switch {
	case bytes.HasPrefix(path, []byte("/v1beta/")) || bytes.Contains(path, []byte(":")):
		api = apiGemini
	case len(ctx.Request.Header.Peek("Anthropic-Version")) > 0:
		api = apiAnthropic
	}
	msg := fmt.Sprintf("mock: no route for %s %s", ctx.Method(), path)
	ctx.SetStatusCode(404)
	ctx.SetContentType("application/json")
	ctx.SetBody(errorBody(api, 404, "", msg, "req_mocknotfound"))
}

func (s *Server) serveModels(ctx *fasthttp.RequestCtx, gemini bool) {
	b := make([]byte, 0, 512)
	switch {
	case gemini:
		b = append(b, `{"models":[`...)
		for i, m := range s.opts.Models {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsonkit.AppendString(b, "models/"+m)
			b = append(b, `,"displayName":`...)
			b = jsonkit.AppendString(b, m)
			b = append(b, `,"inputTokenLimit":1048576,"outputTokenLimit":65536,"supportedGenerationMethods":["generateContent","countTokens"]}`...)
		}
		b = append(b, `]}`...)
	case len(ctx.Request.Header.Peek("Anthropic-Version")) > 0:
		b = append(b, `{"data":[`...)
		for i, m := range s.opts.Models {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"model","id":`...)
			b = jsonkit.AppendString(b, m)
			b = append(b, `,"display_name":`...)
			b = jsonkit.AppendString(b, m)
			b = append(b, `,"created_at":`...)
			b = jsonkit.AppendString(b, time.Unix(s.opts.Created, 0).UTC().Format(time.RFC3339))
			b = append(b, '}')
		}
		b = append(b, `],"has_more":false,"first_id":`...)
		b = jsonkit.AppendString(b, s.opts.Models[0])
		b = append(b, `,"last_id":`...)
		b = jsonkit.AppendString(b, s.opts.Models[len(s.opts.Models)-1])
		b = append(b, '}')
	default:
		b = append(b, `{"object":"list","data":[`...)
		for i, m := range s.opts.Models {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsonkit.AppendString(b, m)
			b = append(b, `,"object":"model","created":`...)
			b = strconv.AppendInt(b, s.opts.Created, 10)
			b = append(b, `,"owned_by":"mock"}`...)
		}
		b = append(b, `]}`...)
	}
	writeJSON(ctx, 200, b)
}

// pickDur resolves a per-reply duration override against the option.
func pickDur(r, o time.Duration) time.Duration {
	if r < 0 {
		return 0
	}
	if r > 0 {
		return r
	}
	return max(o, 0)
}

func pickInt(r, o int) int {
	if r < 0 {
		return 0
	}
	if r > 0 {
		return r
	}
	return max(o, 0)
}

func (s *Server) serveModel(ctx *fasthttp.RequestCtx, api apiKind, model string, stream, geminiSSE bool) {
	rec := s.record(ctx, apiNames[api], stream)
	body := ctx.PostBody()
	r, err := s.next(rec.Script, rec)
	if err != nil {
		ctx.SetStatusCode(400)
		ctx.SetContentType("application/json")
		ctx.SetBody(errorBody(api, 400, "", err.Error(), "req_mockscript"))
		return
	}
	seq := s.seq.Add(1)
	p := s.newPlan(api, &r, seq, body, model, stream, geminiSSE)

	headerDelay := pickDur(r.HeaderDelay, s.opts.HeaderDelay)
	ttft := pickDur(r.TTFT, s.opts.TTFT)
	isErr := r.Status != 0 && r.Status != 200
	if !stream || isErr {
		headerDelay += ttft
	}
	if !s.sleep(headerDelay) {
		ctx.SetConnectionClose()
		ctx.SetStatusCode(503)
		return
	}
	h := &ctx.Response.Header
	switch api {
	case apiAnthropic:
		h.Set("Request-Id", "req_"+p.key)
	case apiChat, apiResponses:
		h.Set("X-Request-Id", "req_"+p.key)
	}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}

	if isErr {
		ctx.SetStatusCode(r.Status)
		ctx.SetContentType("application/json")
		for k, v := range r.Headers {
			h.Set(k, v)
		}
		ctx.SetBody(errorBody(api, r.Status, r.ErrorType, r.ErrorMessage, "req_"+p.key))
		return
	}
	if !stream {
		var b []byte
		switch api {
		case apiAnthropic:
			b = p.anthropicJSON()
		case apiChat:
			b = p.chatJSON()
		case apiResponses:
			b = p.responsesJSON()
		case apiGemini:
			b = p.geminiJSON()
		}
		if api == apiGemini {
			ctx.SetContentType("application/json; charset=UTF-8")
		} else {
			ctx.SetContentType("application/json")
		}
		for k, v := range r.Headers {
			h.Set(k, v)
		}
		ctx.SetStatusCode(200)
		ctx.SetBody(b)
		return
	}

	switch {
	case api == apiGemini && !geminiSSE:
		ctx.SetContentType("application/json; charset=UTF-8")
	case api == apiGemini:
		ctx.SetContentType("text/event-stream")
	default:
		ctx.SetContentType("text/event-stream; charset=utf-8")
	}
	h.Set("Cache-Control", "no-cache")
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	ctx.SetStatusCode(200)
	ctx.Response.ImmediateHeaderFlush = true
	ctx.SetBodyStream(p.eventStream(ttft), -1)
}

func (s *Server) newPlan(api apiKind, r *Reply, seq uint64, body []byte, model string, stream, geminiSSE bool) *plan {
	p := &plan{
		s:         s,
		api:       api,
		stream:    stream,
		geminiSSE: geminiSSE,
		r:         r,
		thinking:  r.Thinking,
		chunk:     pickInt(r.ChunkSize, s.opts.ChunkSize),
		created:   s.opts.Created,
	}
	if api != apiGemini {
		model = gjson.GetBytes(body, "model").String()
		if api == apiChat && stream {
			p.includeUsage = gjson.GetBytes(body, "stream_options.include_usage").Bool()
		}
	}
	p.stamp = s.opts.StampText && stream && (api == apiAnthropic || api == apiChat)
	if r.Model != "" {
		model = r.Model
	}
	if model == "" {
		model = "mock-model"
	}
	p.model = model

	if r.ID != "" {
		p.key, p.id = r.ID, r.ID
	} else {
		p.key = "mock" + fmt.Sprintf("%06d", seq)
		switch api {
		case apiAnthropic:
			p.id = "msg_" + p.key
		case apiChat:
			p.id = "chatcmpl-" + p.key
		case apiResponses:
			p.id = "resp_" + p.key
		default:
			p.id = p.key
		}
	}

	p.text = r.Text
	if p.text == "" {
		p.text = loremText(pickInt(r.PadText, s.opts.PadText))
	}

	outChars := len(p.text)
	if p.thinking != nil {
		outChars += len(p.thinking.Text)
	}
	if len(r.ToolCalls) > 0 {
		p.calls = make([]call, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			c := call{id: tc.ID, name: tc.Name, args: tc.Args}
			if c.args == "" {
				c.args = "{}"
			}
			if c.id == "" && api != apiGemini {
				prefix := "call_"
				if api == apiAnthropic {
					prefix = "toolu_"
				}
				c.id = prefix + p.key + "_" + strconv.Itoa(i)
			}
			if api == apiAnthropic || api == apiGemini {
				c.obj = compactObject(c.args)
			}
			outChars += len(c.name) + len(c.args)
			p.calls[i] = c
		}
	}

	p.stop = r.Stop
	if p.stop == "" {
		p.stop = "end"
		if len(p.calls) > 0 {
			p.stop = "tool_use"
		}
	}

	p.usage = r.Usage
	if s.cache != nil && p.usage.Input == 0 && p.usage.CacheRead == 0 && p.usage.CacheWrite == 0 {
		s.cache.usage(api, body, model, &p.usage)
	}
	if p.usage.Input == 0 {
		p.usage.Input = max(1, len(body)/4)
	}
	if p.usage.Output == 0 {
		p.usage.Output = max(1, (outChars+3)/4)
	}
	return p
}

// textPieces is the text of the stream's text deltas: the text in chunks,
// or, when stamping, as many stamp placeholders.
func (p *plan) textPieces() []string {
	pieces := split(p.text, p.chunk)
	if p.stamp {
		ph := stampText(p.chunk)
		for i := range pieces {
			pieces[i] = ph
		}
	}
	return pieces
}

// eventStream renders the whole stream up front and returns its reader.
func (p *plan) eventStream(ttft time.Duration) *eventStream {
	e := &eventStream{
		s:         p.s,
		ttft:      ttft,
		delay:     pickDur(p.r.InterEventDelay, p.s.opts.InterEventDelay),
		hold:      pickDur(p.r.Hold, p.s.opts.Hold),
		holdAfter: max(p.s.opts.HoldAfter, 1),
		pingEvery: pickDur(p.r.PingEvery, p.s.opts.PingEvery),
		gate:      p.s.opts.Gate,
	}
	ev := &events{}
	switch p.api {
	case apiAnthropic:
		p.anthropicStream(ev)
		e.ping = []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")
	case apiChat:
		p.chatStream(ev)
		e.ping = []byte(": ping\n\n")
	case apiResponses:
		p.responsesStream(ev)
		e.ping = []byte(": ping\n\n")
	case apiGemini:
		p.geminiStream(ev)
	}
	if n := p.r.CutAfterEvents; n != 0 {
		ev.truncate(n)
		e.cut = true
	} else if n := p.r.ErrorAfterEvents; n != 0 {
		ev.truncate(n)
		p.streamError(ev)
		ev.finish()
	} else {
		ev.finish()
	}
	e.buf, e.ends, e.stamps = ev.b, ev.ends, ev.stamps
	return e
}

// events accumulates stream events in one buffer; ends[i] is the offset just
// past event i. trailer is appended to the last event when the stream ends
// normally (the closing ']' of the Gemini JSON array).
type events struct {
	b       []byte
	ends    []int
	trailer string
	stamps  []stampSlot // in event order
}

func (e *events) mark() { e.ends = append(e.ends, len(e.b)) }

// sse starts an SSE event; an empty name writes a data-only event.
func (e *events) sse(name string) {
	if name != "" {
		e.b = append(e.b, "event: "...)
		e.b = append(e.b, name...)
		e.b = append(e.b, '\n')
	}
	e.b = append(e.b, "data: "...)
}

// end terminates an SSE event started with sse.
func (e *events) end() {
	e.b = append(e.b, '\n', '\n')
	e.mark()
}

// truncate keeps the first n events (n < 0 keeps none).
func (e *events) truncate(n int) {
	if n < 0 {
		n = 0
	}
	if n >= len(e.ends) {
		return
	}
	if n == 0 {
		e.b = e.b[:0]
	} else {
		e.b = e.b[:e.ends[n-1]]
	}
	e.ends = e.ends[:n]
	for i, st := range e.stamps {
		if st.event >= n {
			e.stamps = e.stamps[:i]
			break
		}
	}
}

func (e *events) finish() {
	if e.trailer == "" {
		return
	}
	e.b = append(e.b, e.trailer...)
	if len(e.ends) == 0 {
		e.mark()
	} else {
		e.ends[len(e.ends)-1] = len(e.b)
	}
}

// streamError appends the API's mid-stream error event.
func (p *plan) streamError(e *events) {
	r := p.r
	switch p.api {
	case apiAnthropic:
		typ, msg := r.ErrorType, r.ErrorMessage
		if typ == "" {
			typ = "overloaded_error"
		}
		if msg == "" {
			msg = "Overloaded"
		}
		e.sse("error")
		e.b = append(e.b, `{"type":"error","error":{"type":`...)
		e.b = jsonkit.AppendString(e.b, typ)
		e.b = append(e.b, `,"message":`...)
		e.b = jsonkit.AppendString(e.b, msg)
		e.b = append(e.b, `}}`...)
		e.end()
	case apiChat:
		typ, msg := r.ErrorType, r.ErrorMessage
		if typ == "" {
			typ = "server_error"
		}
		if msg == "" {
			msg = "The server had an error while processing your request."
		}
		e.sse("")
		e.b = append(e.b, `{"error":{"message":`...)
		e.b = jsonkit.AppendString(e.b, msg)
		e.b = append(e.b, `,"type":`...)
		e.b = jsonkit.AppendString(e.b, typ)
		e.b = append(e.b, `,"param":null,"code":null}}`...)
		e.end()
	case apiResponses:
		code, msg := r.ErrorType, r.ErrorMessage
		if code == "" {
			code = "server_error"
		}
		if msg == "" {
			msg = "The server had an error while processing your request."
		}
		e.sse("error")
		e.b = append(e.b, `{"type":"error","sequence_number":`...)
		e.b = appendInt(e.b, len(e.ends)) // every Responses event is numbered from 0
		e.b = append(e.b, `,"code":`...)
		e.b = jsonkit.AppendString(e.b, code)
		e.b = append(e.b, `,"message":`...)
		e.b = jsonkit.AppendString(e.b, msg)
		e.b = append(e.b, `,"param":null}`...)
		e.end()
	case apiGemini:
		status, msg := r.ErrorType, r.ErrorMessage
		if status == "" {
			status = "INTERNAL"
		}
		if msg == "" {
			msg = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
		}
		code := 500
		for c, st := range googleStatus {
			if st == status {
				code = c
			}
		}
		if p.geminiSSE {
			e.sse("")
		} else if len(e.ends) == 0 {
			e.b = append(e.b, '[')
		} else {
			e.b = append(e.b, ",\r\n"...)
		}
		e.b = append(e.b, `{"error":{"code":`...)
		e.b = appendInt(e.b, code)
		e.b = append(e.b, `,"message":`...)
		e.b = jsonkit.AppendString(e.b, msg)
		e.b = append(e.b, `,"status":`...)
		e.b = jsonkit.AppendString(e.b, status)
		e.b = append(e.b, `}}`...)
		if p.geminiSSE {
			e.b = append(e.b, p.geminiEOL()...)
		}
		e.mark()
	}
}

var googleStatus = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	501: "NOT_IMPLEMENTED",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

var anthropicErrorType = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	504: "timeout_error",
	529: "overloaded_error",
}

// errorBody renders a non-200 error body in the API's own shape.
func errorBody(api apiKind, status int, typ, msg, reqID string) []byte {
	if msg == "" {
		switch {
		case status == 529:
			msg = "Overloaded"
		case status == 429:
			msg = "Rate limit exceeded (mock)"
		default:
			msg = fmt.Sprintf("mock error: HTTP %d", status)
		}
	}
	b := make([]byte, 0, 160+len(msg))
	switch api {
	case apiAnthropic:
		if typ == "" {
			typ = anthropicErrorType[status]
		}
		if typ == "" {
			typ = "invalid_request_error"
			if status >= 500 {
				typ = "api_error"
			}
		}
		b = append(b, `{"type":"error","error":{"type":`...)
		b = jsonkit.AppendString(b, typ)
		b = append(b, `,"message":`...)
		b = jsonkit.AppendString(b, msg)
		b = append(b, `},"request_id":`...)
		b = jsonkit.AppendString(b, reqID)
		b = append(b, '}')
	case apiChat, apiResponses:
		code := ""
		if typ == "" {
			switch {
			case status == 401:
				typ, code = "invalid_request_error", "invalid_api_key"
			case status == 429:
				typ, code = "requests", "rate_limit_exceeded"
			case status >= 500:
				typ = "server_error"
			default:
				typ = "invalid_request_error"
			}
		}
		b = append(b, `{"error":{"message":`...)
		b = jsonkit.AppendString(b, msg)
		b = append(b, `,"type":`...)
		b = jsonkit.AppendString(b, typ)
		b = append(b, `,"param":null,"code":`...)
		b = appendStrOrNull(b, code)
		b = append(b, `}}`...)
	case apiGemini:
		if typ == "" {
			typ = googleStatus[status]
		}
		if typ == "" {
			typ = "INVALID_ARGUMENT"
			if status >= 500 {
				typ = "INTERNAL"
			}
		}
		b = append(b, `{"error":{"code":`...)
		b = appendInt(b, status)
		b = append(b, `,"message":`...)
		b = jsonkit.AppendString(b, msg)
		b = append(b, `,"status":`...)
		b = jsonkit.AppendString(b, typ)
		b = append(b, `}}`...)
	}
	return b
}

// b64 encodes a thought signature for Gemini, whose thoughtSignature is bytes.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
