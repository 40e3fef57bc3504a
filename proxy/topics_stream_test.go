package proxy_test

// The topic-chapter session of topics_test.go, streamed and driven entirely
// by the official SDKs: each SDK accumulates the spliced stream and builds
// the next request from the accumulated reply the way a real agent does.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// topicStreamReply is what the agent got from one streamed turn, as the SDK
// accumulated it.
type topicStreamReply struct {
	text  string
	calls []mock.ToolCall // ID, Name and Args (raw JSON) of each tool call
	stop  string          // the stop / finish reason in the API's terms
	err   error           // the SDK's stream error; nil on a clean end
	// events is the stream's event (or chunk) types, in order, for
	// diagnostics.
	events []string
}

// topicStreamSession is one agent conversation held in an SDK's own types.
type topicStreamSession interface {
	// user appends a user message to the history.
	user(text string)
	// toolResult appends the agent's result "ok" for its call id.
	toolResult(id, name string)
	// send streams the history, checks the stream is well formed, and
	// appends the accumulated reply to the history.
	send(t *testing.T, ctx context.Context) topicStreamReply
	// sendUnary is send with the SDK's non-streaming call.
	sendUnary(t *testing.T, ctx context.Context) topicStreamReply
}

// topicStreamAPI is one streaming API: its name in topicAPIs(), how it
// reports a finished turn and a tool-use turn, and its SDK session.
type topicStreamAPI struct {
	name             string
	endStop, toolUse string
	path, query      string // of the upstream request
	session          func(t *testing.T, base string, hdr map[string]string, hc *http.Client) topicStreamSession
}

// topicSDKSessions are the official SDK sessions, by kit driver name.
var topicSDKSessions = map[string]func(t *testing.T, base string, hdr map[string]string, hc *http.Client) topicStreamSession{
	"anthropic":        newAnthTopicSession,
	"openai_chat":      newChatTopicSession,
	"openai_responses": newRespTopicSession,
	"gemini":           newGeminiTopicSession,
}

// topicStreamAPIs lists every kit driver with its SDK session; the stop
// values and the streamed request's path come from the driver.
func topicStreamAPIs() []topicStreamAPI {
	var out []topicStreamAPI
	for _, d := range kit.Drivers() {
		path, query, _ := strings.Cut(d.Path("", true), "?")
		st := d.Stops()
		out = append(out, topicStreamAPI{name: d.Name(), endStop: st.End, toolUse: st.ToolUse, path: path, query: query, session: topicSDKSessions[d.Name()]})
	}
	return out
}

// topicAPINamed returns the topicAPIs() adapter of name (for its history
// and static paths).
func topicAPINamed(t *testing.T, name string) topicAPI {
	t.Helper()
	for _, a := range topicAPIs() {
		if a.name == name {
			return a
		}
	}
	t.Fatalf("no topicAPI %q", name)
	return topicAPI{}
}

// ---- Anthropic Messages ----

type anthTopicSession struct {
	c anthropic.Client
	p anthropic.MessageNewParams
}

func newAnthTopicSession(_ *testing.T, base string, hdr map[string]string, hc *http.Client) topicStreamSession {
	opts := []aoption.RequestOption{aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0), aoption.WithHTTPClient(hc)}
	for k, v := range hdr {
		opts = append(opts, aoption.WithHeader(k, v))
	}
	return &anthTopicSession{
		c: anthropic.NewClient(opts...),
		p: anthropic.MessageNewParams{
			Model:     "claude-test",
			MaxTokens: 512,
			System:    []anthropic.TextBlockParam{{Text: "You are terse."}},
			Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
				Name: "Read", Description: anthropic.String("Read a file"), InputSchema: anthropic.ToolInputSchemaParam{},
			}}},
		},
	}
}

func (s *anthTopicSession) user(text string) {
	s.p.Messages = append(s.p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
}

func (s *anthTopicSession) toolResult(id, _ string) {
	s.p.Messages = append(s.p.Messages, anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, "ok", false)))
}

func (s *anthTopicSession) send(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	st := s.c.Messages.NewStreaming(ctx, s.p)
	defer st.Close()
	var msg anthropic.Message
	var r topicStreamReply
	for st.Next() {
		ev := st.Current()
		r.events = append(r.events, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			r.err = err
			return r
		}
	}
	r.err = st.Err()
	if r.err != nil {
		return r
	}
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

	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			r.text += b.Text
		case "tool_use":
			r.calls = append(r.calls, mock.ToolCall{ID: b.ID, Name: b.Name, Args: string(b.Input)})
		}
	}
	r.stop = string(msg.StopReason)
	s.p.Messages = append(s.p.Messages, msg.ToParam())
	return r
}

// ---- OpenAI Chat Completions ----

type chatTopicSession struct {
	c openai.Client
	p openai.ChatCompletionNewParams
}

func topicOpenAIClient(base string, hdr map[string]string, hc *http.Client) openai.Client {
	opts := []ooption.RequestOption{ooption.WithBaseURL(base + "/v1"), ooption.WithAPIKey("sk-test"), ooption.WithMaxRetries(0), ooption.WithHTTPClient(hc)}
	for k, v := range hdr {
		opts = append(opts, ooption.WithHeader(k, v))
	}
	return openai.NewClient(opts...)
}

func newChatTopicSession(_ *testing.T, base string, hdr map[string]string, hc *http.Client) topicStreamSession {
	return &chatTopicSession{
		c: topicOpenAIClient(base, hdr, hc),
		p: openai.ChatCompletionNewParams{
			Model:    "gpt-test",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse.")},
			Tools: []openai.ChatCompletionToolUnionParam{
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "Read", Parameters: openai.FunctionParameters{"type": "object"}}),
			},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		},
	}
}

func (s *chatTopicSession) user(text string) {
	s.p.Messages = append(s.p.Messages, openai.UserMessage(text))
}

func (s *chatTopicSession) toolResult(id, _ string) {
	s.p.Messages = append(s.p.Messages, openai.ToolMessage("ok", id))
}

func (s *chatTopicSession) send(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	st := s.c.Chat.Completions.NewStreaming(ctx, s.p)
	defer st.Close()
	acc := openai.ChatCompletionAccumulator{}
	var r topicStreamReply
	finishes := 0
	for st.Next() {
		ch := st.Current()
		r.events = append(r.events, ch.RawJSON())
		if !acc.AddChunk(ch) {
			r.err = &topicStreamError{"the ChatCompletionAccumulator rejected chunk " + ch.RawJSON()}
			return r
		}
		for _, c := range ch.Choices {
			if c.FinishReason != "" {
				finishes++
			}
		}
	}
	r.err = st.Err()
	if r.err != nil {
		return r
	}
	require.Equal(t, 1, finishes, "one finish_reason per reply; chunks: %v", r.events)
	require.Len(t, acc.Choices, 1)
	m := acc.Choices[0].Message
	r.text = m.Content
	for _, tc := range m.ToolCalls {
		r.calls = append(r.calls, mock.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
	}
	r.stop = acc.Choices[0].FinishReason
	s.p.Messages = append(s.p.Messages, m.ToParam())
	return r
}

type topicStreamError struct{ msg string }

func (e *topicStreamError) Error() string { return e.msg }

// ---- OpenAI Responses ----

type respTopicSession struct {
	c openai.Client
	p responses.ResponseNewParams
}

func newRespTopicSession(_ *testing.T, base string, hdr map[string]string, hc *http.Client) topicStreamSession {
	return &respTopicSession{
		c: topicOpenAIClient(base, hdr, hc),
		p: responses.ResponseNewParams{
			Model:        "gpt-test",
			Instructions: openai.String("You are terse."),
			Store:        openai.Bool(false), // the full input is resent: the ledger applies
			Tools:        []responses.ToolUnionParam{responses.ToolParamOfFunction("Read", map[string]any{"type": "object"}, false)},
		},
	}
}

func (s *respTopicSession) add(item responses.ResponseInputItemUnionParam) {
	s.p.Input.OfInputItemList = append(s.p.Input.OfInputItemList, item)
}

func (s *respTopicSession) user(text string) {
	s.add(responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
}

func (s *respTopicSession) toolResult(id, _ string) {
	item := responses.ResponseInputItemParamOfFunctionCallOutput("ok")
	item.OfFunctionCallOutput.CallID = openai.String(id)
	s.add(item)
}

func (s *respTopicSession) send(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	st := s.c.Responses.NewStreaming(ctx, s.p)
	defer st.Close()
	var r topicStreamReply
	var final *responses.Response
	var done []string // output_item.done item types, by output_index
	seq := int64(-1)
	for st.Next() {
		ev := st.Current()
		r.events = append(r.events, ev.Type)
		require.Greater(t, ev.SequenceNumber, seq, "sequence_number increases; events: %v", r.events)
		seq = ev.SequenceNumber
		switch ev.Type {
		case "error":
			r.err = &topicStreamError{"error event: " + ev.RawJSON()}
		case "response.output_item.done":
			require.Equal(t, int64(len(done)), ev.OutputIndex, "output_index is dense; events: %v", r.events)
			done = append(done, ev.Item.Type)
		case "response.completed":
			resp := ev.Response
			final = &resp
		}
	}
	if err := st.Err(); err != nil {
		r.err = err
	}
	if r.err != nil {
		return r
	}
	require.NotNil(t, final, "no response.completed; events: %v", r.events)
	require.Equal(t, "response.created", r.events[0])
	require.Equal(t, "response.completed", r.events[len(r.events)-1])
	count := map[string]int{}
	for _, e := range r.events {
		count[e]++
	}
	require.Equal(t, 1, count["response.created"], "events: %v", r.events)
	require.Equal(t, 1, count["response.completed"], "events: %v", r.events)

	var types []string
	for _, item := range final.Output {
		types = append(types, item.Type)
		switch item.Type {
		case "message":
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
			p := item.AsReasoning().ToParam()
			s.add(responses.ResponseInputItemUnionParam{OfReasoning: &p})
		default:
			t.Fatalf("unexpected output item %s", item.RawJSON())
		}
	}
	require.Equal(t, done, types, "the streamed items are the completed response's output")
	r.stop = string(final.Status)
	return r
}

// ---- Gemini ----

type geminiTopicSession struct {
	c        *genai.Client
	cfg      *genai.GenerateContentConfig
	contents []*genai.Content
}

func newGeminiTopicSession(t *testing.T, base string, hdr map[string]string, hc *http.Client) topicStreamSession {
	h := http.Header{}
	for k, v := range hdr {
		h.Set(k, v)
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "g-test",
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: "v1beta", Headers: h},
	})
	require.NoError(t, err)
	return &geminiTopicSession{
		c: c,
		cfg: &genai.GenerateContentConfig{
			SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: "You are terse."}}},
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
				{Name: "Read", ParametersJsonSchema: map[string]any{"type": "object"}},
			}}},
		},
	}
}

func (s *geminiTopicSession) user(text string) {
	s.contents = append(s.contents, genai.NewContentFromText(text, genai.RoleUser))
}

func (s *geminiTopicSession) toolResult(id, name string) {
	p := genai.NewPartFromFunctionResponse(name, map[string]any{"content": "ok"})
	p.FunctionResponse.ID = id
	s.contents = append(s.contents, genai.NewContentFromParts([]*genai.Part{p}, genai.RoleUser))
}

func (s *geminiTopicSession) send(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	var r topicStreamReply
	var parts []*genai.Part
	var responseID string
	finishes := 0
	for resp, err := range s.c.Models.GenerateContentStream(ctx, "gemini-test", s.contents, s.cfg) {
		if err != nil {
			r.err = err
			return r
		}
		b, _ := json.Marshal(resp.Candidates)
		r.events = append(r.events, string(b))
		if finishes > 0 {
			t.Fatalf("a chunk after the finish reason; chunks: %v", r.events)
		}
		require.Len(t, resp.Candidates, 1, "chunks: %v", r.events)
		if responseID == "" {
			responseID = resp.ResponseID
		}
		require.Equal(t, responseID, resp.ResponseID, "one reply, one responseId")
		cand := resp.Candidates[0]
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				// A part without data (the {"text":""} some streams end
				// with) is left out, as the SDK's Chat leaves it out of
				// its curated history: sent back it would be {}.
				if p == nil || (p.Text == "" && p.FunctionCall == nil && p.FunctionResponse == nil &&
					p.InlineData == nil && p.FileData == nil && p.ExecutableCode == nil && p.CodeExecutionResult == nil) {
					continue
				}
				parts = joinStreamPart(parts, p)
			}
		}
		if cand.FinishReason != "" {
			finishes++
			r.stop = string(cand.FinishReason)
		}
	}
	require.Equal(t, 1, finishes, "one finish reason, on the last chunk; chunks: %v", r.events)
	for _, p := range parts {
		switch {
		case p.FunctionCall != nil:
			args, err := json.Marshal(p.FunctionCall.Args)
			require.NoError(t, err)
			r.calls = append(r.calls, mock.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: string(args)})
		case !p.Thought:
			r.text += p.Text
		}
	}
	s.contents = append(s.contents, genai.NewContentFromParts(parts, genai.RoleModel))
	return r
}

// topicWireLog is the SDKs' transport: it keeps every request body and the
// bytes of every reply stream, shown when a test fails.
type topicWireLog struct {
	mu    sync.Mutex
	turns []*topicWireTurn
}

type topicWireTurn struct {
	url, req string
	mu       sync.Mutex
	resp     bytes.Buffer
}

func (w *topicWireTurn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resp.Write(p)
}

type teeReadCloser struct {
	io.Reader
	io.Closer
}

func (l *topicWireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	turn := &topicWireTurn{url: req.URL.String()}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		turn.req = string(b)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	l.mu.Lock()
	l.turns = append(l.turns, turn)
	l.mu.Unlock()
	resp, err := rawClient.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = teeReadCloser{io.TeeReader(resp.Body, turn), resp.Body}
	return resp, nil
}

func (l *topicWireLog) dump(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range l.turns {
		w.mu.Lock()
		t.Logf("agent request %d: POST %s\n%s\nreply stream:\n%s", i+1, w.url, w.req, w.resp.String())
		w.mu.Unlock()
	}
}

// ---- the scenario ----

// TestTopicsStreamingSDK is TestTopicsSessionAllAPIs with streamed replies,
// driven by the official SDKs:
//  1. the model opens a chapter alone: shepherd answers, streams the
//     follow-up into the same reply; the SDK accumulates one well-formed
//     reply holding only the follow-up's text;
//  2. the model opens a chapter and calls Read: the SDK sees only Read;
//  3. the agent returns Read's result: the model's view is restored, and
//     every upstream request extends the previous one byte for byte.
func TestTopicsStreamingSDK(t *testing.T) {
	for _, sa := range topicStreamAPIs() {
		t.Run(sa.name, func(t *testing.T) {
			t.Parallel()
			api := topicAPINamed(t, sa.name)
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
			sessionID := "stream-" + sa.name
			h.mock.Script(
				mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Research"}`}}},
				mock.Reply{ID: "r2", Text: "Looking around."},
				mock.Reply{ID: "r3", ToolCalls: []mock.ToolCall{
					{ID: "t2", Name: "create_new_topic", Args: `{"title":"Implementing Fix"}`},
					{ID: "c1", Name: "Read", Args: `{"path":"main.go"}`},
				}},
				mock.Reply{ID: "r4", Text: "Fixed."},
			)
			wire := &topicWireLog{}
			t.Cleanup(func() {
				if t.Failed() {
					wire.dump(t)
					for i, r := range h.mock.Requests() {
						t.Logf("upstream request %d: %s?%s\n%s", i+1, r.Path, r.Query, r.Body)
					}
				}
			})
			ctx := e2eCtx(t)
			s := sa.session(t, h.URL, map[string]string{"X-Session-Id": sessionID}, &http.Client{Transport: wire})
			requireStreamed := func(reqs []mock.Recorded) {
				t.Helper()
				for i, r := range reqs {
					require.True(t, r.Stream, "upstream request %d is streamed", i+1)
					require.Equal(t, sa.path, r.Path, "upstream request %d", i+1)
					require.Equal(t, sa.query, r.Query, "upstream request %d", i+1)
				}
			}

			// Turn 1.
			s.user("fix the bug")
			reply := s.send(t, ctx)
			require.NoError(t, reply.err, "stream events: %v", reply.events)
			require.Equal(t, "Looking around.", reply.text)
			require.Empty(t, reply.calls, "the agent never sees create_new_topic")
			require.Equal(t, sa.endStop, reply.stop)
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2, "one follow-up")
			requireStreamed(reqs)
			r1, r2 := reqs[0].Body, reqs[1].Body
			require.Contains(t, gjson.GetBytes(r1, "tools").Raw, "create_new_topic")
			require.Contains(t, string(r1), "[Active Topic: none yet]")
			require.Contains(t, string(r1), "Organise your work into logical chapters")
			requireAppendOnly(t, api, r1, r2)
			require.Contains(t, string(r2), `Topic changed to: \"Research\"`)

			// Turn 2.
			s.user("now fix it")
			reply = s.send(t, ctx)
			require.NoError(t, reply.err, "stream events: %v", reply.events)
			require.Len(t, reply.calls, 1, "only the agent's own call: %+v", reply.calls)
			require.Equal(t, "Read", reply.calls[0].Name)
			require.Equal(t, "c1", reply.calls[0].ID)
			require.JSONEq(t, `{"path":"main.go"}`, reply.calls[0].Args)
			require.Empty(t, reply.text)
			require.Equal(t, sa.toolUse, reply.stop)
			reqs = h.mock.Requests()
			require.Len(t, reqs, 3, "no follow-up when the agent has calls to run")
			requireStreamed(reqs)
			r3 := reqs[2].Body
			requireAppendOnly(t, api, r2, r3)
			require.Contains(t, string(r3), "Looking around.")
			require.Contains(t, string(r3), "[Active Topic: Research]")

			// Turn 3.
			s.toolResult(reply.calls[0].ID, reply.calls[0].Name)
			reply = s.send(t, ctx)
			require.NoError(t, reply.err, "stream events: %v", reply.events)
			require.Equal(t, "Fixed.", reply.text)
			require.Empty(t, reply.calls)
			require.Equal(t, sa.endStop, reply.stop)
			reqs = h.mock.Requests()
			require.Len(t, reqs, 4)
			requireStreamed(reqs)
			r4 := reqs[3].Body
			requireAppendOnly(t, api, r3, r4)
			tail := string(r4[strings.Index(string(r4), "now fix it"):])
			topicResult := strings.Index(tail, `Topic changed to: \"Implementing Fix\"`)
			agentResult := strings.Index(tail, `"ok"`)
			require.GreaterOrEqual(t, topicResult, 0, "shepherd's result is restored in the model's view")
			require.Less(t, topicResult, agentResult, "shepherd's result comes first among the tool results")
			topicCall := strings.Index(tail, `"name":"create_new_topic"`)
			require.GreaterOrEqual(t, topicCall, 0, "the topic call is back in the model's history")
			require.Less(t, topicCall, topicResult, "the call comes before its result")
			require.Contains(t, tail, "[Active Topic: Implementing Fix]")

			sess, err := h.store.Get(t.Context(), state.Key{Tenant: streamTenant(t, h, sessionID), Session: sessionID})
			require.NoError(t, err)
			require.Equal(t, "Implementing Fix", topicsOf(t, sess).Topic)
			require.Len(t, topicsOf(t, sess).Chapters, 2)
			require.Equal(t, "Research", topicsOf(t, sess).Chapters[0].Title)
			require.Equal(t, "Implementing Fix", topicsOf(t, sess).Chapters[1].Title)
			require.Len(t, topicsOf(t, sess).Chapters[1].Calls, 1)
			require.Equal(t, "Read", topicsOf(t, sess).Chapters[1].Calls[0].Name)
		})
	}
}

// streamTenant finds the tenant of session id in the harness's store (as
// tenantFor does for the non-streaming sessions).
func streamTenant(t *testing.T, h *harness, id string) string {
	t.Helper()
	list, err := h.store.List(t.Context(), "", 10)
	require.NoError(t, err)
	for _, s := range list {
		if s.ID == id {
			return s.Tenant
		}
	}
	t.Fatalf("session %s not found", id)
	return ""
}

// joinStreamPart appends a streamed Gemini part to parts the way agents keep
// them: a text delta is joined onto the text part before it; every other
// part (thoughts, calls, signed text) is kept as is.
func joinStreamPart(parts []*genai.Part, p *genai.Part) []*genai.Part {
	if n := len(parts); n > 0 && p.Text != "" && !p.Thought && p.ThoughtSignature == nil &&
		parts[n-1].Text != "" && !parts[n-1].Thought && parts[n-1].FunctionCall == nil {
		parts[n-1] = &genai.Part{Text: parts[n-1].Text + p.Text, ThoughtSignature: parts[n-1].ThoughtSignature}
		return parts
	}
	return append(parts, p)
}
