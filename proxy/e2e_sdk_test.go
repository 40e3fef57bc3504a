package proxy_test

// End-to-end tests with the official SDK clients: shepherd and the scripted
// mock provider run on loopback, and anthropic-sdk-go, openai-go and
// google.golang.org/genai talk to them, once through shepherd and once to the
// mock directly. Each test scripts the same reply twice (with explicit ids),
// so the two calls must give the SDK identical results: what the SDK
// accumulates through shepherd must equal what the mock scripted and what
// the SDK gets from the mock itself.
//
// This file holds the shared fixtures and the Anthropic Messages tests; the
// OpenAI tests are in e2e_openai_test.go and the Gemini tests in
// e2e_gemini_test.go.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// Scripted content shared by every API.
const (
	// e2eText is long enough to be split into dozens of deltas, with JSON
	// escapes and multi-byte runes that must survive every hop intact.
	e2eText = "Here is the plan — read main.go, then grep for the entry point. " +
		"Ünïcödé ✓ 日本語 \"quoted\" and a back\\slash,\nsecond line\twith a tab; " +
		"the rest of this sentence only pads the reply so that the mock splits it " +
		"into many small deltas, which the proxy must forward one event at a time " +
		"without merging, reordering or dropping any of them. Done."
	e2eThinking  = "The user wants main.go. I should read it first — then search for func main."
	e2eSignature = "EqQBCkYIBhgCKkD+e2e/sig=="
	e2eChunk     = 7 // characters per text / arguments delta

	e2eCall1ID, e2eCall1Name, e2eCall1Args = "call_e2e_read", "read_file", `{"path":"main.go","limit":200}`
	e2eCall2ID, e2eCall2Name, e2eCall2Args = "call_e2e_grep", "grep", `{"pattern":"func main","paths":["cmd","proxy"],"ignore_case":true,"n":3}`

	e2eTimeout = 30 * time.Second
)

// e2eUsage is the scripted usage. Anthropic reports it as is; OpenAI and
// Gemini report prompt tokens as Input+CacheRead+CacheWrite = 110, total 155.
var e2eUsage = mock.Usage{Input: 100, Output: 45, CacheRead: 7, CacheWrite: 3, Reasoning: 12}

// e2eReply is the rich reply: thinking with a signature, chunked text, two
// tool calls with explicit ids and JSON arguments, and usage.
func e2eReply(id string) mock.Reply {
	return mock.Reply{
		ID:       id,
		Text:     e2eText,
		Thinking: &mock.Thinking{Text: e2eThinking, Signature: e2eSignature},
		ToolCalls: []mock.ToolCall{
			{ID: e2eCall1ID, Name: e2eCall1Name, Args: e2eCall1Args},
			{ID: e2eCall2ID, Name: e2eCall2Name, Args: e2eCall2Args},
		},
		Usage: e2eUsage,
	}
}

// e2eMinDeltas is the number of whole text deltas the mock splits e2eText
// into.
func e2eMinDeltas() int { return utf8.RuneCountInString(e2eText) / e2eChunk }

// e2eHarness starts mock and shepherd with the e2e chunk size.
func e2eHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, harnessOptions{Mock: mock.Options{ChunkSize: e2eChunk}})
}

// e2eCtx bounds every blocking SDK call of a test.
func e2eCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	t.Cleanup(cancel)
	return ctx
}

// e2eViaAndDirect runs fn against shepherd first, then against the mock.
func e2eViaAndDirect[T any](h *harness, fn func(base string) T) (via, direct T) {
	via = fn(h.URL)
	direct = fn(h.mock.URL())
	return via, direct
}

// e2eJSON marshals v for comparing SDK structs that carry no raw JSON.
func e2eJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// e2eRequireSameRequests asserts that the mock saw n requests, in pairs of one
// through shepherd then one direct, and that shepherd forwarded each body
// byte for byte (no hooks are configured) on the same path and query.
func e2eRequireSameRequests(t *testing.T, h *harness, n int) {
	t.Helper()
	reqs := h.mock.Requests()
	require.Len(t, reqs, n)
	for i := 0; i+1 < len(reqs); i += 2 {
		via, dir := reqs[i], reqs[i+1]
		require.Equal(t, dir.Path, via.Path)
		require.Equal(t, dir.Query, via.Query)
		require.Equal(t, dir.Stream, via.Stream)
		require.Equal(t, string(dir.Body), string(via.Body), "shepherd must forward the SDK's body unchanged")
	}
}

// ---- Anthropic Messages ----

func e2eAnthropicClient(base string, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(base),
		aoption.WithAPIKey("sk-ant-e2e"),
		aoption.WithMaxRetries(0),
	}, opts...)...)
}

func e2eAnthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-e2e",
		MaxTokens: 4096,
		System:    []anthropic.TextBlockParam{{Text: "You are a terse coding agent."}},
		Thinking:  anthropic.ThinkingConfigParamOfEnabled(1024),
		Tools: []anthropic.ToolUnionParam{
			{OfTool: &anthropic.ToolParam{Name: e2eCall1Name, InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"path": map[string]any{"type": "string"}}}}},
			{OfTool: &anthropic.ToolParam{Name: e2eCall2Name, InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"pattern": map[string]any{"type": "string"}}}}},
		},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Show me main.go"))},
	}
}

// e2eCheckAnthropic asserts that msg is the scripted reply.
func e2eCheckAnthropic(t *testing.T, msg *anthropic.Message) {
	t.Helper()
	require.Equal(t, "msg_e2e", msg.ID)
	require.Equal(t, anthropic.Model("claude-e2e"), msg.Model)
	require.Len(t, msg.Content, 4)

	require.Equal(t, "thinking", msg.Content[0].Type)
	require.Equal(t, e2eThinking, msg.Content[0].Thinking)
	require.Equal(t, e2eSignature, msg.Content[0].Signature)

	require.Equal(t, "text", msg.Content[1].Type)
	require.Equal(t, e2eText, msg.Content[1].Text)

	for i, want := range []struct{ id, name, args string }{
		{e2eCall1ID, e2eCall1Name, e2eCall1Args}, {e2eCall2ID, e2eCall2Name, e2eCall2Args},
	} {
		b := msg.Content[2+i]
		require.Equal(t, "tool_use", b.Type)
		require.Equal(t, want.id, b.ID)
		require.Equal(t, want.name, b.Name)
		require.JSONEq(t, want.args, string(b.Input))
	}

	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Equal(t, int64(100), msg.Usage.InputTokens)
	require.Equal(t, int64(45), msg.Usage.OutputTokens)
	require.Equal(t, int64(7), msg.Usage.CacheReadInputTokens)
	require.Equal(t, int64(3), msg.Usage.CacheCreationInputTokens)
}

// e2eAnthStream is what the SDK saw of one Messages stream.
type e2eAnthStream struct {
	msg   anthropic.Message // accumulated
	types []string
	raws  []string // each event's raw JSON
	err   error    // stream error (nil on a clean end)
}

func e2eRunAnthropicStream(t *testing.T, ctx context.Context, c anthropic.Client, p anthropic.MessageNewParams, opts ...aoption.RequestOption) e2eAnthStream {
	t.Helper()
	st := c.Messages.NewStreaming(ctx, p, opts...)
	defer st.Close()
	var r e2eAnthStream
	for st.Next() {
		ev := st.Current()
		r.types = append(r.types, ev.Type)
		r.raws = append(r.raws, ev.RawJSON())
		require.NoError(t, r.msg.Accumulate(ev))
	}
	r.err = st.Err()
	return r
}

func TestE2ESDKAnthropicMessage(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("msg_e2e"), e2eReply("msg_e2e"))
	ctx := e2eCtx(t)

	type result struct {
		msg *anthropic.Message
		err error
	}
	via, dir := e2eViaAndDirect(h, func(base string) result {
		c := e2eAnthropicClient(base)
		m, err := c.Messages.New(ctx, e2eAnthropicParams())
		return result{m, err}
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckAnthropic(t, via.msg)
	require.Equal(t, dir.msg.RawJSON(), via.msg.RawJSON())
	require.Equal(t, e2eJSON(t, dir.msg), e2eJSON(t, via.msg))
	require.Equal(t, *dir.msg, *via.msg)
	e2eRequireSameRequests(t, h, 2)
}

func TestE2ESDKAnthropicStream(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("msg_e2e"), e2eReply("msg_e2e"))
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eAnthStream {
		return e2eRunAnthropicStream(t, ctx, e2eAnthropicClient(base), e2eAnthropicParams())
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckAnthropic(t, &via.msg)

	require.Equal(t, len(dir.types), len(via.types), "event count")
	require.Equal(t, dir.types, via.types, "event type sequence")
	require.Equal(t, dir.raws, via.raws, "event payloads")
	require.Equal(t, e2eJSON(t, dir.msg), e2eJSON(t, via.msg))
	require.Equal(t, dir.msg, via.msg)

	require.Equal(t, "message_start", via.types[0])
	require.Equal(t, "message_delta", via.types[len(via.types)-2])
	require.Equal(t, "message_stop", via.types[len(via.types)-1])
	deltas := 0
	for _, ty := range via.types {
		if ty == "content_block_delta" {
			deltas++
		}
	}
	require.Greater(t, deltas, e2eMinDeltas(), "text and thinking arrive in many deltas")
	e2eRequireSameRequests(t, h, 2)
}

func TestE2ESDKAnthropicErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		reply   mock.Reply
		status  int
		errType string
		stream  bool
	}{
		{"429", mock.Reply{ID: "msg_e2e_err", Status: 429, RetryAfter: "1", ErrorMessage: "e2e: rate limited, slow down"}, 429, "rate_limit_error", false},
		{"429_stream", mock.Reply{ID: "msg_e2e_err", Status: 429, RetryAfter: "1", ErrorMessage: "e2e: rate limited, slow down"}, 429, "rate_limit_error", true},
		{"529", mock.Reply{ID: "msg_e2e_err", Status: 529, RetryAfter: "1", ErrorMessage: "e2e: overloaded"}, 529, "overloaded_error", false},
		{"529_stream", mock.Reply{ID: "msg_e2e_err", Status: 529, RetryAfter: "1", ErrorMessage: "e2e: overloaded"}, 529, "overloaded_error", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := e2eHarness(t)
			h.mock.Script(tc.reply, tc.reply)
			ctx := e2eCtx(t)
			via, dir := e2eViaAndDirect(h, func(base string) *anthropic.Error {
				c := e2eAnthropicClient(base)
				var err error
				if tc.stream {
					r := e2eRunAnthropicStream(t, ctx, c, e2eAnthropicParams())
					require.Empty(t, r.types)
					err = r.err
				} else {
					_, err = c.Messages.New(ctx, e2eAnthropicParams())
				}
				var apierr *anthropic.Error
				require.ErrorAs(t, err, &apierr)
				return apierr
			})
			require.Equal(t, tc.status, via.StatusCode)
			require.Equal(t, tc.errType, string(via.Type()))
			require.Contains(t, via.RawJSON(), tc.reply.ErrorMessage)
			require.Contains(t, via.Error(), tc.reply.ErrorMessage)
			require.Equal(t, "1", via.Response.Header.Get("Retry-After"))
			require.Equal(t, "req_msg_e2e_err", via.RequestID)

			require.Equal(t, dir.StatusCode, via.StatusCode)
			require.Equal(t, dir.RawJSON(), via.RawJSON())
			require.Equal(t, dir.RequestID, via.RequestID)
			require.Equal(t, 2, len(h.mock.Requests()), "no SDK retries")
		})
	}
}

func TestE2ESDKAnthropicMidStreamError(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("msg_e2e_mid")
	r.ErrorAfterEvents = 6
	r.ErrorType = "overloaded_error"
	r.ErrorMessage = "e2e: overloaded mid-stream"
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eAnthStream {
		return e2eRunAnthropicStream(t, ctx, e2eAnthropicClient(base), e2eAnthropicParams())
	})
	require.Error(t, via.err)
	require.Contains(t, via.err.Error(), "overloaded_error")
	require.Contains(t, via.err.Error(), r.ErrorMessage)
	require.Len(t, via.types, 6)
	require.Equal(t, dir.types, via.types)
	require.Equal(t, dir.raws, via.raws)
	// The SDK turns the error event into an API error; only the base URL in
	// its message differs.
	var viaErr, dirErr *anthropic.Error
	require.ErrorAs(t, via.err, &viaErr)
	require.ErrorAs(t, dir.err, &dirErr)
	require.Equal(t, "overloaded_error", string(viaErr.Type()))
	require.Equal(t, dirErr.RawJSON(), viaErr.RawJSON())
	require.Equal(t, dirErr.StatusCode, viaErr.StatusCode)
}

// An upstream that drops the connection mid-stream reaches the SDK through
// shepherd as the API's own stream error event (directly, it is a transport
// error): either way the SDK reports an error after the same events.
func TestE2ESDKAnthropicUpstreamCut(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("msg_e2e_cut")
	r.CutAfterEvents = 4
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eAnthStream {
		return e2eRunAnthropicStream(t, ctx, e2eAnthropicClient(base), e2eAnthropicParams())
	})
	require.Error(t, dir.err)
	require.Error(t, via.err)
	require.Equal(t, dir.types, via.types)
	require.Equal(t, dir.raws, via.raws)
	require.Len(t, via.types, 4)
	require.Contains(t, via.err.Error(), "upstream connection failed")
}

func TestE2ESDKAnthropicMalformed(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)
	c := e2eAnthropicClient(h.URL)

	_, err := c.Messages.New(ctx, e2eAnthropicParams(), aoption.WithJSONSet("messages", "not a list"))
	var apierr *anthropic.Error
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, http.StatusBadRequest, apierr.StatusCode)
	require.Equal(t, "invalid_request_error", string(apierr.Type()))
	require.Contains(t, apierr.RawJSON(), "messages")

	r := e2eRunAnthropicStream(t, ctx, c, e2eAnthropicParams(), aoption.WithJSONSet("max_tokens", "many"))
	require.ErrorAs(t, r.err, &apierr)
	require.Equal(t, http.StatusBadRequest, apierr.StatusCode)
	require.Contains(t, apierr.RawJSON(), "max_tokens")
	require.Empty(t, h.mock.Requests(), "a malformed body never reaches the upstream")
}

func TestE2ESDKAnthropicSessionHeader(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)
	c := e2eAnthropicClient(h.URL, aoption.WithHeader("X-Claude-Code-Session-Id", "sess-e2e"))

	var resp *http.Response
	_, err := c.Messages.New(ctx, e2eAnthropicParams(), aoption.WithResponseInto(&resp))
	require.NoError(t, err)
	require.Equal(t, "sess-e2e", resp.Header.Get("X-Shepherd-Session"))
	require.NotEmpty(t, resp.Header.Get("X-Shepherd-Request-Id"))

	resp = nil
	r := e2eRunAnthropicStream(t, ctx, c, e2eAnthropicParams(), aoption.WithResponseInto(&resp))
	require.NoError(t, r.err)
	require.NotNil(t, resp)
	require.Equal(t, "sess-e2e", resp.Header.Get("X-Shepherd-Session"))

	for _, rec := range h.mock.Requests() {
		require.Equal(t, "sess-e2e", rec.Header.Get("X-Claude-Code-Session-Id"), "the session header is forwarded")
	}
}
