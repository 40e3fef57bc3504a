package proxy_test

// Helpers of the truncation-recovery tests: per-API knowledge (stop values,
// output-limit fields, history items), agents in three modes (raw HTTP,
// official SDK non-streaming, official SDK streaming) that report what the
// agent got, usage and thinking included, and readers of the model's view.

import (
	"context"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// recAPI is one wire API as the recovery tests see it.
type recAPI struct {
	api topicAPI       // raw builders' history and static paths
	sa  topicStreamAPI // the SDK session
	// endStop, callStop and cutStop are the stop values the agent reads for
	// a finished text reply, a reply ending in tool calls and a reply cut by
	// the output limit (Responses: the response status; the cut one also
	// has incomplete_details.reason max_output_tokens).
	endStop, callStop, cutStop string
	// limit is the JSON path of the output limit in a request body.
	limit string
	// routes are the metric route labels (non-streaming, streaming).
	route, streamRoute string
}

func recAPIs() []recAPI {
	byName := map[string]topicStreamAPI{}
	for _, sa := range topicStreamAPIs() {
		byName[sa.name] = sa
	}
	var out []recAPI
	for _, a := range topicAPIs() {
		st := a.d.Stops()
		out = append(out, recAPI{
			api: a, sa: byName[a.name],
			endStop: st.End, callStop: st.ToolUse, cutStop: st.Cut, limit: a.d.LimitPath(),
			route: a.d.Route(false), streamRoute: a.d.Route(true),
		})
	}
	return out
}

// recAPINamed is the recAPIs() entry of the API named name.
func recAPINamed(t *testing.T, name string) recAPI {
	t.Helper()
	for _, a := range recAPIs() {
		if a.api.name == name {
			return a
		}
	}
	t.Fatalf("no recAPI %q", name)
	return recAPI{}
}

// defaultModel is the model a test agent of api uses unless told otherwise
// (all of them use the instruction strategy).
func (a recAPI) defaultModel() string { return a.api.d.DefaultModel() }

// noLimit leaves the output limit out of a raw request.
const noLimit = kit.NoLimit

// rawPath is the path of a raw non-streaming request.
func (a recAPI) rawPath(model string) string { return a.api.d.Path(model, false) }

// rawRequest is a non-streaming request of model with history items and
// output limit (noLimit: none; 0: an explicit 0), shaped like topicAPIs()'
// requests.
func (a recAPI) rawRequest(model string, limit int, items []string) string {
	if limit == 0 {
		limit = kit.ZeroLimit
	}
	return a.api.d.Request(kit.Request{Model: model, Limit: limit, System: "You are terse.", Tools: []kit.Tool{kit.ReadTool}, History: items})
}

// ---- what the agent got ----

// recThinking is one thinking block (reasoning item, thought) the agent got.
// sig is the signature (Responses encrypted_content; Gemini's decoded
// thoughtSignature).
type recThinking struct{ text, sig string }

// recReply is what the agent got from one turn.
type recReply struct {
	text string
	// textBlocks counts the text blocks (Anthropic), text parts (Gemini
	// non-streaming), message items (Responses) holding the text; -1 where
	// the agent's view does not tell (Chat; Gemini streamed deltas).
	textBlocks int
	calls      []mock.ToolCall
	stop       string
	// incomplete is Responses' incomplete_details.reason.
	incomplete string
	output     int64 // output tokens in the reply's usage
	// thinking is nil with thinkingKnown false where the SDK does not
	// expose the API's reasoning (Chat SDK).
	thinking      []recThinking
	thinkingKnown bool
	// attempts is the X-Shepherd-Recovery-Attempts header (raw mode).
	attempts string
	events   []string
	raw      []byte // raw mode: the reply body
}

// recAgent is one agent conversation.
type recAgent interface {
	user(text string)
	toolResult(id, name string)
	send(t *testing.T) recReply
}

// recCase is one API driven one way: "raw" (HTTP, non-streaming), "unary"
// (the official SDK, non-streaming) or "stream" (the official SDK,
// streaming).
type recCase struct {
	api  recAPI
	mode string
}

func (c recCase) name() string { return c.api.api.name + "/" + c.mode }

func recCases(modes ...string) []recCase {
	var out []recCase
	for _, a := range recAPIs() {
		for _, m := range modes {
			out = append(out, recCase{api: a, mode: m})
		}
	}
	return out
}

// recAgentOpts tune an agent: the model ("" for the API's test model) and
// the output limit of its requests (0: 2000; noLimit: none).
type recAgentOpts struct {
	model string
	limit int
}

// agent starts a conversation of session id against h. On failure the
// agent's wire traffic and the upstream requests are logged.
func (c recCase) agent(t *testing.T, h *harness, session string, o recAgentOpts) recAgent {
	t.Helper()
	if o.model == "" {
		o.model = c.api.defaultModel()
	}
	if o.limit == 0 {
		o.limit = 2000
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range h.mock.Requests() {
				t.Logf("upstream request %d (stream=%v): %s?%s\n%s", i+1, r.Stream, r.Path, r.Query, r.Body)
			}
		}
	})
	if c.mode == "raw" {
		a := kit.NewAgent(c.api.api.d, h.URL, map[string]string{"X-Session-Id": session})
		a.Request.Model, a.Request.Limit = o.model, o.limit
		return &rawRecAgent{api: c.api, a: a}
	}
	wire := &topicWireLog{}
	t.Cleanup(func() {
		if t.Failed() {
			wire.dump(t)
		}
	})
	s := c.api.sa.session(t, h.URL, map[string]string{"X-Session-Id": session}, &http.Client{Transport: wire})
	rs, ok := s.(recSDKSession)
	require.True(t, ok, "no recovery SDK agent for %T", s)
	rs.setModelLimit(o.model, o.limit)
	return &sdkRecAgent{s: rs, stream: c.mode == "stream", ctx: e2eCtx(t), model: o.model}
}

// recSDKSession is an SDK session the recovery tests drive: they set its
// model and output limit and read the whole reply, thinking included.
type recSDKSession interface {
	topicStreamSession
	// setModelLimit sets the model and the output limit (noLimit: none,
	// or 1024 where the API requires one).
	setModelLimit(model string, limit int)
	// recSend sends the history, streamed or not, and appends the reply.
	recSend(t *testing.T, ctx context.Context, model string, stream bool) recReply
}

func (s *anthTopicSession) setModelLimit(model string, limit int) {
	s.p.Model = anthropic.Model(model)
	if limit == noLimit {
		limit = 1024 // required by the API
	}
	s.p.MaxTokens = int64(limit)
}

func (s *chatTopicSession) setModelLimit(model string, limit int) {
	s.p.Model = model
	if limit != noLimit {
		s.p.MaxCompletionTokens = openai.Int(int64(limit))
	}
}

func (s *respTopicSession) setModelLimit(model string, limit int) {
	s.p.Model = model
	if limit != noLimit {
		s.p.MaxOutputTokens = openai.Int(int64(limit))
	}
}

// setModelLimit: the model goes in the path, per request.
func (s *geminiTopicSession) setModelLimit(_ string, limit int) {
	if limit != noLimit {
		s.cfg.MaxOutputTokens = int32(limit)
	}
}

func (s *anthTopicSession) recSend(t *testing.T, ctx context.Context, _ string, stream bool) recReply {
	return recSendAnthropic(t, ctx, s, stream)
}

func (s *chatTopicSession) recSend(t *testing.T, ctx context.Context, _ string, stream bool) recReply {
	return recSendChat(t, ctx, s, stream)
}

func (s *respTopicSession) recSend(t *testing.T, ctx context.Context, _ string, stream bool) recReply {
	return recSendResponses(t, ctx, s, stream)
}

func (s *geminiTopicSession) recSend(t *testing.T, ctx context.Context, model string, stream bool) recReply {
	return recSendGemini(t, ctx, s, model, stream)
}

// ---- raw HTTP ----

// rawRecAgent is a kit agent with the model and output limit of the case.
type rawRecAgent struct {
	api recAPI
	a   *kit.Agent
}

func (a *rawRecAgent) user(text string)           { a.a.User(text) }
func (a *rawRecAgent) toolResult(id, name string) { a.a.ToolResult(id, name, "ok") }

func (a *rawRecAgent) send(t *testing.T) recReply {
	t.Helper()
	resp, body := a.a.Post(t)
	require.Equal(t, 200, resp.StatusCode, string(body))
	r := parseRawReply(t, a.api.api.name, body)
	r.attempts = resp.Header.Get("X-Shepherd-Recovery-Attempts")
	return r
}

// parseRawReply reads a non-streaming reply body of api.
func parseRawReply(t *testing.T, api string, body []byte) recReply {
	t.Helper()
	kr, err := kit.Get(t, api).ParseReply(body)
	require.NoError(t, err)
	return recReply{text: kr.Text, textBlocks: kr.TextBlocks, calls: kr.Calls, stop: kr.Stop, incomplete: kr.Incomplete,
		output: kr.Output, thinking: recThinkings(kr.Thinking), thinkingKnown: true, raw: body}
}

// recThinkings converts the kit's thinking blocks.
func recThinkings(ts []kit.Thinking) []recThinking {
	var out []recThinking
	for _, th := range ts {
		out = append(out, recThinking{th.Text, th.Sig})
	}
	return out
}

// ---- official SDKs ----

type sdkRecAgent struct {
	s      recSDKSession
	stream bool
	ctx    context.Context
	model  string
}

func (a *sdkRecAgent) user(text string)           { a.s.user(text) }
func (a *sdkRecAgent) toolResult(id, name string) { a.s.toolResult(id, name) }

func (a *sdkRecAgent) send(t *testing.T) recReply {
	t.Helper()
	return a.s.recSend(t, a.ctx, a.model, a.stream)
}

func recSendAnthropic(t *testing.T, ctx context.Context, s *anthTopicSession, stream bool) recReply {
	t.Helper()
	var r recReply
	var msg anthropic.Message
	if stream {
		st := s.c.Messages.NewStreaming(ctx, s.p)
		defer st.Close()
		for st.Next() {
			ev := st.Current()
			r.events = append(r.events, ev.Type)
			require.NoError(t, msg.Accumulate(ev), "events: %v", r.events)
		}
		require.NoError(t, st.Err(), "events: %v", r.events)
		// One message: exactly one start, one message_delta, one stop, last.
		count := map[string]int{}
		for _, e := range r.events {
			count[e]++
		}
		require.Equal(t, "message_start", r.events[0], "events: %v", r.events)
		require.Equal(t, "message_stop", r.events[len(r.events)-1], "events: %v", r.events)
		require.Equal(t, 1, count["message_start"], "events: %v", r.events)
		require.Equal(t, 1, count["message_delta"], "events: %v", r.events)
		require.Equal(t, 1, count["message_stop"], "events: %v", r.events)
		require.Equal(t, count["content_block_start"], count["content_block_stop"], "events: %v", r.events)
		require.Equal(t, len(msg.Content), count["content_block_start"], "events: %v", r.events)
	} else {
		m, err := s.c.Messages.New(ctx, s.p)
		require.NoError(t, err)
		msg = *m
	}
	r.thinkingKnown = true
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			r.text += b.Text
			r.textBlocks++
		case "thinking":
			r.thinking = append(r.thinking, recThinking{b.Thinking, b.Signature})
		case "tool_use":
			r.calls = append(r.calls, mock.ToolCall{ID: b.ID, Name: b.Name, Args: string(b.Input)})
		}
	}
	r.stop = string(msg.StopReason)
	r.output = msg.Usage.OutputTokens
	s.p.Messages = append(s.p.Messages, msg.ToParam())
	return r
}

func recSendChat(t *testing.T, ctx context.Context, s *chatTopicSession, stream bool) recReply {
	t.Helper()
	r := recReply{textBlocks: -1}
	var m openai.ChatCompletionMessage
	if stream {
		st := s.c.Chat.Completions.NewStreaming(ctx, s.p)
		defer st.Close()
		acc := openai.ChatCompletionAccumulator{}
		finishes := 0
		for st.Next() {
			ch := st.Current()
			r.events = append(r.events, ch.RawJSON())
			require.True(t, acc.AddChunk(ch), "the ChatCompletionAccumulator rejected chunk %s", ch.RawJSON())
			for _, c := range ch.Choices {
				if c.FinishReason != "" {
					finishes++
				}
			}
		}
		require.NoError(t, st.Err(), "chunks: %v", r.events)
		require.Equal(t, 1, finishes, "one finish_reason per reply; chunks: %v", r.events)
		require.Len(t, acc.Choices, 1)
		m = acc.Choices[0].Message
		r.stop = acc.Choices[0].FinishReason
		r.output = acc.Usage.CompletionTokens
	} else {
		p := s.p
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{} // streamed requests only
		resp, err := s.c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		require.Len(t, resp.Choices, 1)
		m = resp.Choices[0].Message
		r.stop = resp.Choices[0].FinishReason
		r.output = resp.Usage.CompletionTokens
		if rc := gjson.Get(m.RawJSON(), "reasoning_content"); rc.Exists() {
			r.thinking = append(r.thinking, recThinking{text: rc.String()})
		}
		r.thinkingKnown = true
	}
	r.text = m.Content
	for _, tc := range m.ToolCalls {
		r.calls = append(r.calls, mock.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
	}
	s.p.Messages = append(s.p.Messages, m.ToParam())
	return r
}

func recSendResponses(t *testing.T, ctx context.Context, s *respTopicSession, stream bool) recReply {
	t.Helper()
	var r recReply
	var final *responses.Response
	if stream {
		st := s.c.Responses.NewStreaming(ctx, s.p)
		defer st.Close()
		var done []string // output_item.done item types, by output_index
		seq := int64(-1)
		for st.Next() {
			ev := st.Current()
			r.events = append(r.events, ev.Type)
			require.Greater(t, ev.SequenceNumber, seq, "sequence_number increases; events: %v", r.events)
			seq = ev.SequenceNumber
			switch ev.Type {
			case "error":
				t.Fatalf("error event: %s", ev.RawJSON())
			case "response.output_item.done":
				require.Equal(t, int64(len(done)), ev.OutputIndex, "output_index is dense; events: %v", r.events)
				done = append(done, ev.Item.Type)
			case "response.completed", "response.incomplete":
				resp := ev.Response
				final = &resp
			}
		}
		require.NoError(t, st.Err(), "events: %v", r.events)
		require.NotNil(t, final, "no terminal event; events: %v", r.events)
		count := map[string]int{}
		for _, e := range r.events {
			count[e]++
		}
		require.Equal(t, "response.created", r.events[0], "events: %v", r.events)
		require.Equal(t, 1, count["response.created"], "events: %v", r.events)
		require.Equal(t, 1, count["response.completed"]+count["response.incomplete"], "one terminal event; events: %v", r.events)
		last := r.events[len(r.events)-1]
		require.True(t, last == "response.completed" || last == "response.incomplete", "events: %v", r.events)
		var types []string
		for _, item := range final.Output {
			types = append(types, item.Type)
		}
		require.Equal(t, done, types, "the streamed items are the final response's output")
	} else {
		resp, err := s.c.Responses.New(ctx, s.p)
		require.NoError(t, err)
		final = resp
	}
	r.thinkingKnown = true
	for _, item := range final.Output {
		switch item.Type {
		case "message":
			r.textBlocks++
			for _, c := range item.AsMessage().Content {
				r.text += c.Text
			}
			m := item.AsMessage().ToParam()
			s.add(responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
		case "function_call":
			fc := item.AsFunctionCall()
			r.calls = append(r.calls, mock.ToolCall{ID: fc.CallID, Name: fc.Name, Args: fc.Arguments})
			p := fc.ToParam()
			s.add(responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		case "reasoning":
			rs := item.AsReasoning()
			var txt strings.Builder
			for _, p := range rs.Summary {
				txt.WriteString(p.Text)
			}
			r.thinking = append(r.thinking, recThinking{txt.String(), rs.EncryptedContent})
			p := rs.ToParam()
			s.add(responses.ResponseInputItemUnionParam{OfReasoning: &p})
		default:
			t.Fatalf("unexpected output item %s", item.RawJSON())
		}
	}
	r.stop = string(final.Status)
	r.incomplete = final.IncompleteDetails.Reason
	r.output = final.Usage.OutputTokens
	return r
}

func recSendGemini(t *testing.T, ctx context.Context, s *geminiTopicSession, model string, stream bool) recReply {
	t.Helper()
	r := recReply{thinkingKnown: true}
	var parts []*genai.Part
	if stream {
		r.textBlocks = -1
		var responseID string
		finishes := 0
		for resp, err := range s.c.Models.GenerateContentStream(ctx, model, s.contents, s.cfg) {
			require.NoError(t, err, "chunks: %v", r.events)
			b, _ := resp.MarshalJSON()
			r.events = append(r.events, string(b))
			require.Zero(t, finishes, "a chunk after the finish reason; chunks: %v", r.events)
			require.Len(t, resp.Candidates, 1, "chunks: %v", r.events)
			if responseID == "" {
				responseID = resp.ResponseID
			}
			require.Equal(t, responseID, resp.ResponseID, "one reply, one responseId")
			cand := resp.Candidates[0]
			if cand.Content != nil {
				for _, p := range cand.Content.Parts {
					if p == nil || (p.Text == "" && p.FunctionCall == nil && p.FunctionResponse == nil && p.ThoughtSignature == nil) {
						continue
					}
					parts = joinStreamPart(parts, p)
				}
			}
			if cand.FinishReason != "" {
				finishes++
				r.stop = string(cand.FinishReason)
			}
			if resp.UsageMetadata != nil {
				r.output = int64(resp.UsageMetadata.CandidatesTokenCount)
			}
		}
		require.Equal(t, 1, finishes, "one finish reason, on the last chunk; chunks: %v", r.events)
	} else {
		resp, err := s.c.Models.GenerateContent(ctx, model, s.contents, s.cfg)
		require.NoError(t, err)
		require.Len(t, resp.Candidates, 1)
		cand := resp.Candidates[0]
		require.NotNil(t, cand.Content)
		parts = cand.Content.Parts
		r.stop = string(cand.FinishReason)
		if resp.UsageMetadata != nil {
			r.output = int64(resp.UsageMetadata.CandidatesTokenCount)
		}
	}
	prevThought := false
	for _, p := range parts {
		thought := p.Thought
		switch {
		case p.FunctionCall != nil:
			thought = false
			r.calls = append(r.calls, mock.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: topicJSON(t, p.FunctionCall.Args)})
		case p.Thought:
			// A stream's consecutive thought chunks are one thought.
			if n := len(r.thinking); n > 0 && prevThought && r.thinking[n-1].sig == "" {
				r.thinking[n-1].text += p.Text
				r.thinking[n-1].sig = string(p.ThoughtSignature)
			} else {
				r.thinking = append(r.thinking, recThinking{p.Text, string(p.ThoughtSignature)})
			}
		default:
			r.text += p.Text
			if !stream {
				r.textBlocks++
			}
		}
		prevThought = thought
	}
	s.contents = append(s.contents, genai.NewContentFromParts(parts, genai.RoleModel))
	return r
}

// ---- the model's view ----

// history is the raw history items of an upstream request body.
func (a recAPI) history(body []byte) []string {
	return kit.History(a.api.d, body)
}

// itemRole is the role of a history item ("" for Responses items without
// one, like reasoning).
func itemRole(item string) string { return gjson.Get(item, "role").String() }

// itemText is the visible text of a history item (thinking excluded).
func (a recAPI) itemText(item string) string { return a.api.d.ItemText(item) }

// itemsText joins the visible text of items.
func (a recAPI) itemsText(items []string) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(a.itemText(it))
	}
	return b.String()
}

// thinkingRaw lists the raw thinking elements of history items: Anthropic
// thinking blocks, Responses reasoning items, Gemini thought parts, Chat
// reasoning_content values.
func (a recAPI) thinkingRaw(items []string) []string { return a.api.d.ThinkingRaw(items) }

// thinkings reads the thinking of history items (thinkingRaw), with
// Gemini's consecutive thought parts (a stream's chunks) joined into one.
func (a recAPI) thinkings(t *testing.T, items []string) []recThinking {
	t.Helper()
	ts, err := a.api.d.Thinkings(items)
	require.NoError(t, err)
	return recThinkings(ts)
}

// mockThinkingRaw renders reply with a private mock as a non-streaming
// reply of api and returns its raw thinking element(s), as thinkingRaw
// would find them in the reply as history: what a continuation must carry
// byte for byte.
func (a recAPI) mockThinkingRaw(t *testing.T, reply mock.Reply) []string {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	m.Script(reply)
	hdr := map[string]string{}
	for k, v := range a.api.headers {
		hdr[k] = v
	}
	model := a.defaultModel()
	resp, body := do(t, "POST", m.URL()+a.rawPath(model), a.rawRequest(model, 2000, []string{a.api.user("hi")}), hdr)
	require.Equal(t, 200, resp.StatusCode, string(body))
	return a.thinkingRaw(a.api.echo(body))
}

// requireContinuation asserts that next, the continuation request, extends
// prev by the partial reply (whose text is partial) and, with the
// instruction strategy, the continue instruction as a user message; with
// prefill, the last item is the partial reply, right-trimmed. It returns
// the items next added.
func requireContinuation(t *testing.T, a recAPI, prev, next []byte, partial, instruction string) []string {
	t.Helper()
	requireAppendOnly(t, a.api, prev, next)
	added := a.history(next)[len(a.history(prev)):]
	require.NotEmpty(t, added, "the continuation adds the partial reply")
	if instruction == "" {
		last := added[len(added)-1]
		require.Contains(t, []string{"assistant", "model"}, itemRole(last), "prefill: the partial reply is the last message: %s", last)
		require.Equal(t, strings.TrimRight(partial, " \t\r\n"), a.itemsText(added), "prefill: the partial text, right-trimmed")
		require.NotContains(t, string(next), "Continue exactly where it stopped", "no instruction with prefill")
		return added
	}
	require.GreaterOrEqual(t, len(added), 2, "partial reply and instruction: %v", added)
	last := added[len(added)-1]
	require.Equal(t, "user", itemRole(last), "the instruction is a user message: %s", last)
	require.Equal(t, instruction, a.itemText(last))
	require.Equal(t, partial, a.itemsText(added[:len(added)-1]), "the partial reply, byte for byte")
	for _, it := range added[:len(added)-1] {
		if r := itemRole(it); r != "" {
			require.Contains(t, []string{"assistant", "model"}, r, "the partial reply is the model's: %s", it)
		}
	}
	return added
}

// metricSum sums the samples of metric name whose labels contain every one
// of labels (e.g. `route="messages"`).
func metricSum(t *testing.T, h *harness, name string, labels ...string) float64 {
	t.Helper()
	return kit.Metrics(t, h.URL+"/metrics").Sum(name, labels...)
}

// recRoute is the metric route label of a case.
func (c recCase) route() string {
	if c.mode == "stream" {
		return c.api.streamRoute
	}
	return c.api.route
}
