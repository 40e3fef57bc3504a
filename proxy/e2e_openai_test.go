package proxy_test

// End-to-end tests with openai-go: Chat Completions and Responses, through
// shepherd and directly against the mock (see e2e_sdk_test.go).

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func e2eOpenAIClient(base string, opts ...ooption.RequestOption) openai.Client {
	return openai.NewClient(append([]ooption.RequestOption{
		ooption.WithBaseURL(base + "/v1"),
		ooption.WithAPIKey("sk-e2e"),
		ooption.WithMaxRetries(0),
	}, opts...)...)
}

var e2eToolSchema = map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}

// ---- Chat Completions ----

func e2eChatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "gpt-e2e",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a terse coding agent."),
			openai.UserMessage("Show me main.go"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: e2eCall1Name, Parameters: e2eToolSchema}),
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: e2eCall2Name, Parameters: e2eToolSchema}),
		},
	}
}

func e2eChatStreamParams() openai.ChatCompletionNewParams {
	p := e2eChatParams()
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	return p
}

// e2eCheckChat asserts that cc is the scripted reply; reasoning is the
// reasoning_content the SDK exposed (an extra field).
func e2eCheckChat(t *testing.T, cc *openai.ChatCompletion, reasoning string) {
	t.Helper()
	require.Equal(t, "chatcmpl_e2e", cc.ID)
	require.Equal(t, "gpt-e2e", cc.Model)
	require.Equal(t, int64(mock.DefaultCreated), cc.Created)
	require.Len(t, cc.Choices, 1)
	ch := cc.Choices[0]
	require.Equal(t, e2eText, ch.Message.Content)
	require.Equal(t, e2eThinking, reasoning)
	require.Equal(t, "tool_calls", ch.FinishReason)
	require.Len(t, ch.Message.ToolCalls, 2)
	for i, want := range []struct{ id, name, args string }{
		{e2eCall1ID, e2eCall1Name, e2eCall1Args}, {e2eCall2ID, e2eCall2Name, e2eCall2Args},
	} {
		tc := ch.Message.ToolCalls[i]
		require.Equal(t, want.id, tc.ID)
		require.Equal(t, want.name, tc.Function.Name)
		require.Equal(t, want.args, tc.Function.Arguments)
	}
	require.Equal(t, int64(110), cc.Usage.PromptTokens)
	require.Equal(t, int64(45), cc.Usage.CompletionTokens)
	require.Equal(t, int64(155), cc.Usage.TotalTokens)
	require.Equal(t, int64(7), cc.Usage.PromptTokensDetails.CachedTokens)
	require.Equal(t, int64(12), cc.Usage.CompletionTokensDetails.ReasoningTokens)
}

// e2eExtraString decodes a JSON string extra field; "" when absent.
func e2eExtraString(t *testing.T, raw string) string {
	t.Helper()
	if raw == "" {
		return ""
	}
	var s string
	require.NoError(t, json.Unmarshal([]byte(raw), &s))
	return s
}

func TestE2ESDKChatCompletion(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("chatcmpl_e2e"), e2eReply("chatcmpl_e2e"))
	ctx := e2eCtx(t)

	type result struct {
		cc  *openai.ChatCompletion
		err error
	}
	via, dir := e2eViaAndDirect(h, func(base string) result {
		c := e2eOpenAIClient(base)
		cc, err := c.Chat.Completions.New(ctx, e2eChatParams())
		return result{cc, err}
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckChat(t, via.cc, e2eExtraString(t, via.cc.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw()))
	require.Equal(t, dir.cc.RawJSON(), via.cc.RawJSON())
	require.Equal(t, e2eJSON(t, dir.cc), e2eJSON(t, via.cc))
	require.Equal(t, *dir.cc, *via.cc)
	e2eRequireSameRequests(t, h, 2)
}

// e2eChatStream is what the SDK saw of one chat completion stream.
type e2eChatStream struct {
	cc        openai.ChatCompletion // accumulated
	raws      []string
	reasoning string
	err       error
}

func e2eRunChatStream(t *testing.T, ctx context.Context, c openai.Client, p openai.ChatCompletionNewParams, opts ...ooption.RequestOption) e2eChatStream {
	t.Helper()
	st := c.Chat.Completions.NewStreaming(ctx, p, opts...)
	defer st.Close()
	acc := openai.ChatCompletionAccumulator{}
	var r e2eChatStream
	var reasoning strings.Builder
	for st.Next() {
		ch := st.Current()
		r.raws = append(r.raws, ch.RawJSON())
		require.True(t, acc.AddChunk(ch), "accumulator rejected chunk %d", len(r.raws))
		if len(ch.Choices) > 0 {
			reasoning.WriteString(e2eExtraString(t, ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"].Raw()))
		}
	}
	r.err = st.Err()
	r.cc = acc.ChatCompletion
	r.reasoning = reasoning.String()
	return r
}

func TestE2ESDKChatStream(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("chatcmpl_e2e"), e2eReply("chatcmpl_e2e"))
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eChatStream {
		return e2eRunChatStream(t, ctx, e2eOpenAIClient(base), e2eChatStreamParams())
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckChat(t, &via.cc, via.reasoning)

	require.Equal(t, len(dir.raws), len(via.raws), "chunk count")
	require.Equal(t, dir.raws, via.raws, "chunk payloads")
	require.Greater(t, len(via.raws), e2eMinDeltas(), "text arrives in many chunks")
	require.Equal(t, e2eJSON(t, dir.cc), e2eJSON(t, via.cc))
	require.Equal(t, dir.cc, via.cc)
	require.Equal(t, dir.reasoning, via.reasoning)
	e2eRequireSameRequests(t, h, 2)
}

func TestE2ESDKChatErrors(t *testing.T) {
	t.Parallel()
	reply := mock.Reply{ID: "chatcmpl_e2e_err", Status: 429, RetryAfter: "1", ErrorMessage: "e2e: rate limited, slow down"}
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := e2eHarness(t)
			h.mock.Script(reply, reply)
			ctx := e2eCtx(t)
			via, dir := e2eViaAndDirect(h, func(base string) *openai.Error {
				c := e2eOpenAIClient(base)
				var err error
				if stream {
					r := e2eRunChatStream(t, ctx, c, e2eChatStreamParams())
					require.Empty(t, r.raws)
					err = r.err
				} else {
					_, err = c.Chat.Completions.New(ctx, e2eChatParams())
				}
				var apierr *openai.Error
				require.ErrorAs(t, err, &apierr)
				return apierr
			})
			require.Equal(t, 429, via.StatusCode)
			require.Equal(t, reply.ErrorMessage, via.Message)
			require.Equal(t, "rate_limit_exceeded", via.Code)
			require.Equal(t, "1", via.Response.Header.Get("Retry-After"))

			require.Equal(t, dir.StatusCode, via.StatusCode)
			require.Equal(t, dir.RawJSON(), via.RawJSON())
			require.Equal(t, dir.Type, via.Type)
			require.Len(t, h.mock.Requests(), 2, "no SDK retries")
		})
	}
}

func TestE2ESDKChatMidStreamError(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("chatcmpl_e2e_mid")
	r.ErrorAfterEvents = 6
	r.ErrorMessage = "e2e: upstream died mid-stream"
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eChatStream {
		return e2eRunChatStream(t, ctx, e2eOpenAIClient(base), e2eChatStreamParams())
	})
	require.Error(t, via.err)
	require.Contains(t, via.err.Error(), r.ErrorMessage)
	require.Len(t, via.raws, 6)
	require.Equal(t, dir.raws, via.raws)
	require.Error(t, dir.err)
	require.Equal(t, dir.err.Error(), via.err.Error())
}

func TestE2ESDKChatUpstreamCut(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("chatcmpl_e2e_cut")
	r.CutAfterEvents = 4
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eChatStream {
		return e2eRunChatStream(t, ctx, e2eOpenAIClient(base), e2eChatStreamParams())
	})
	require.Error(t, dir.err)
	require.Error(t, via.err)
	require.Len(t, via.raws, 4)
	require.Equal(t, dir.raws, via.raws)
	require.Contains(t, via.err.Error(), "upstream connection failed")
}

func TestE2ESDKChatMalformed(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)
	c := e2eOpenAIClient(h.URL)

	_, err := c.Chat.Completions.New(ctx, e2eChatParams(), ooption.WithJSONSet("messages", 42))
	var apierr *openai.Error
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, http.StatusBadRequest, apierr.StatusCode)
	require.Equal(t, "invalid_request_error", apierr.Type)
	require.Contains(t, apierr.Message, "messages")

	r := e2eRunChatStream(t, ctx, c, e2eChatStreamParams(), ooption.WithJSONSet("model", 7))
	require.ErrorAs(t, r.err, &apierr)
	require.Equal(t, http.StatusBadRequest, apierr.StatusCode)
	require.Contains(t, apierr.Message, "model")
	require.Empty(t, h.mock.Requests(), "a malformed body never reaches the upstream")
}

// ---- Responses ----

func e2eResponsesParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "gpt-e2e",
		Instructions: openai.String("You are a terse coding agent."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Show me main.go")},
		Tools: []responses.ToolUnionParam{
			responses.ToolParamOfFunction(e2eCall1Name, e2eToolSchema, false),
			responses.ToolParamOfFunction(e2eCall2Name, e2eToolSchema, false),
		},
	}
}

// e2eCheckResponse asserts that r is the scripted reply.
func e2eCheckResponse(t *testing.T, r *responses.Response) {
	t.Helper()
	require.Equal(t, "resp_e2e", r.ID)
	require.Equal(t, "gpt-e2e", string(r.Model))
	require.Equal(t, responses.ResponseStatusCompleted, r.Status)
	require.Equal(t, float64(mock.DefaultCreated), r.CreatedAt)
	require.Equal(t, e2eText, r.OutputText())
	require.Len(t, r.Output, 4)

	require.Equal(t, "reasoning", r.Output[0].Type)
	rs := r.Output[0].AsReasoning()
	require.Len(t, rs.Summary, 1)
	require.Equal(t, e2eThinking, rs.Summary[0].Text)
	require.Equal(t, e2eSignature, rs.EncryptedContent)

	require.Equal(t, "message", r.Output[1].Type)
	for i, want := range []struct{ id, name, args string }{
		{e2eCall1ID, e2eCall1Name, e2eCall1Args}, {e2eCall2ID, e2eCall2Name, e2eCall2Args},
	} {
		require.Equal(t, "function_call", r.Output[2+i].Type)
		fc := r.Output[2+i].AsFunctionCall()
		require.Equal(t, want.id, fc.CallID)
		require.Equal(t, want.name, fc.Name)
		require.Equal(t, want.args, fc.Arguments)
	}

	require.Equal(t, int64(110), r.Usage.InputTokens)
	require.Equal(t, int64(7), r.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, int64(45), r.Usage.OutputTokens)
	require.Equal(t, int64(12), r.Usage.OutputTokensDetails.ReasoningTokens)
	require.Equal(t, int64(155), r.Usage.TotalTokens)
}

func TestE2ESDKResponses(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("resp_e2e"), e2eReply("resp_e2e"))
	ctx := e2eCtx(t)

	type result struct {
		r   *responses.Response
		err error
	}
	via, dir := e2eViaAndDirect(h, func(base string) result {
		c := e2eOpenAIClient(base)
		r, err := c.Responses.New(ctx, e2eResponsesParams())
		return result{r, err}
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckResponse(t, via.r)
	require.Equal(t, dir.r.RawJSON(), via.r.RawJSON())
	require.Equal(t, e2eJSON(t, dir.r), e2eJSON(t, via.r))
	require.Equal(t, *dir.r, *via.r)
	e2eRequireSameRequests(t, h, 2)
}

// e2eRespStream is what the SDK saw of one Responses stream.
type e2eRespStream struct {
	types []string
	raws  []string
	final *responses.Response // from response.completed
	last  responses.ResponseStreamEventUnion
	err   error
}

func e2eRunResponsesStream(t *testing.T, ctx context.Context, c openai.Client, p responses.ResponseNewParams, opts ...ooption.RequestOption) e2eRespStream {
	t.Helper()
	st := c.Responses.NewStreaming(ctx, p, opts...)
	defer st.Close()
	var r e2eRespStream
	for st.Next() {
		ev := st.Current()
		r.types = append(r.types, ev.Type)
		r.raws = append(r.raws, ev.RawJSON())
		r.last = ev
		if ev.Type == "response.completed" {
			resp := ev.Response
			r.final = &resp
		}
	}
	r.err = st.Err()
	return r
}

func TestE2ESDKResponsesStream(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("resp_e2e"), e2eReply("resp_e2e"))
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eRespStream {
		return e2eRunResponsesStream(t, ctx, e2eOpenAIClient(base), e2eResponsesParams())
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	require.NotNil(t, via.final, "no response.completed event")
	e2eCheckResponse(t, via.final)

	require.Equal(t, len(dir.types), len(via.types), "event count")
	require.Equal(t, dir.types, via.types, "event type sequence")
	require.Equal(t, dir.raws, via.raws, "event payloads")
	require.Equal(t, dir.final.RawJSON(), via.final.RawJSON())
	require.Equal(t, *dir.final, *via.final)

	require.Equal(t, "response.created", via.types[0])
	require.Equal(t, "response.completed", via.types[len(via.types)-1])
	var text strings.Builder
	deltas := 0
	for i, raw := range via.raws {
		if via.types[i] == "response.output_text.delta" {
			var ev responses.ResponseTextDeltaEvent
			require.NoError(t, json.Unmarshal([]byte(raw), &ev))
			text.WriteString(ev.Delta)
			deltas++
		}
	}
	require.Equal(t, e2eText, text.String())
	require.GreaterOrEqual(t, deltas, e2eMinDeltas(), "text arrives in many deltas")
	e2eRequireSameRequests(t, h, 2)
}

func TestE2ESDKResponsesErrors(t *testing.T) {
	t.Parallel()
	reply := mock.Reply{ID: "resp_e2e_err", Status: 429, RetryAfter: "1", ErrorMessage: "e2e: rate limited, slow down"}
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := e2eHarness(t)
			h.mock.Script(reply, reply)
			ctx := e2eCtx(t)
			via, dir := e2eViaAndDirect(h, func(base string) *openai.Error {
				c := e2eOpenAIClient(base)
				var err error
				if stream {
					r := e2eRunResponsesStream(t, ctx, c, e2eResponsesParams())
					require.Empty(t, r.types)
					err = r.err
				} else {
					_, err = c.Responses.New(ctx, e2eResponsesParams())
				}
				var apierr *openai.Error
				require.ErrorAs(t, err, &apierr)
				return apierr
			})
			require.Equal(t, 429, via.StatusCode)
			require.Equal(t, reply.ErrorMessage, via.Message)
			require.Equal(t, "1", via.Response.Header.Get("Retry-After"))

			require.Equal(t, dir.StatusCode, via.StatusCode)
			require.Equal(t, dir.RawJSON(), via.RawJSON())
			require.Len(t, h.mock.Requests(), 2, "no SDK retries")
		})
	}
}

// A Responses stream reports a mid-stream failure as an "error" event, which
// openai-go delivers as an event rather than as st.Err().
func TestE2ESDKResponsesMidStreamError(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("resp_e2e_mid")
	r.ErrorAfterEvents = 6
	r.ErrorMessage = "e2e: upstream died mid-stream"
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eRespStream {
		return e2eRunResponsesStream(t, ctx, e2eOpenAIClient(base), e2eResponsesParams())
	})
	require.NoError(t, via.err)
	require.Len(t, via.types, 7)
	require.Equal(t, "error", via.last.Type)
	require.Equal(t, "server_error", via.last.Code)
	require.Equal(t, r.ErrorMessage, via.last.Message)
	require.Nil(t, via.final)
	require.Equal(t, dir.types, via.types)
	require.Equal(t, dir.raws, via.raws)
	require.Equal(t, dir.err, via.err)
}

func TestE2ESDKResponsesUpstreamCut(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("resp_e2e_cut")
	r.CutAfterEvents = 4
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eRespStream {
		return e2eRunResponsesStream(t, ctx, e2eOpenAIClient(base), e2eResponsesParams())
	})
	require.Error(t, dir.err, "directly, a cut is a transport error")
	require.Len(t, dir.types, 4)
	// Through shepherd the cut becomes the API's error event.
	require.NoError(t, via.err)
	require.Len(t, via.types, 5)
	require.Equal(t, dir.raws, via.raws[:4])
	require.Equal(t, "error", via.last.Type)
	require.Contains(t, via.last.Message, "upstream connection failed")
}

func TestE2ESDKResponsesMalformed(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)
	c := e2eOpenAIClient(h.URL)

	_, err := c.Responses.New(ctx, e2eResponsesParams(), ooption.WithJSONSet("input", 42))
	var apierr *openai.Error
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, http.StatusBadRequest, apierr.StatusCode)
	require.Equal(t, "invalid_request_error", apierr.Type)
	require.Contains(t, apierr.Message, "input")

	r := e2eRunResponsesStream(t, ctx, c, e2eResponsesParams(), ooption.WithJSONSet("tools", "all of them"))
	require.ErrorAs(t, r.err, &apierr)
	require.Equal(t, http.StatusBadRequest, apierr.StatusCode)
	require.Contains(t, apierr.Message, "tools")
	require.Empty(t, h.mock.Requests(), "a malformed body never reaches the upstream")
}

// The session id reaches the client in X-Shepherd-Session: the configured
// header (X-Session-Id by default) on Chat Completions, Codex's session_id
// on Responses.
func TestE2ESDKOpenAISessionHeader(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)

	chat := e2eOpenAIClient(h.URL, ooption.WithHeader("X-Session-Id", "sess-chat"))
	var resp *http.Response
	_, err := chat.Chat.Completions.New(ctx, e2eChatParams(), ooption.WithResponseInto(&resp))
	require.NoError(t, err)
	require.Equal(t, "sess-chat", resp.Header.Get("X-Shepherd-Session"))
	require.NotEmpty(t, resp.Header.Get("X-Shepherd-Request-Id"))

	resp = nil
	cs := e2eRunChatStream(t, ctx, chat, e2eChatStreamParams(), ooption.WithResponseInto(&resp))
	require.NoError(t, cs.err)
	require.NotNil(t, resp)
	require.Equal(t, "sess-chat", resp.Header.Get("X-Shepherd-Session"))

	rc := e2eOpenAIClient(h.URL, ooption.WithHeader("session_id", "sess-codex"))
	resp = nil
	_, err = rc.Responses.New(ctx, e2eResponsesParams(), ooption.WithResponseInto(&resp))
	require.NoError(t, err)
	require.Equal(t, "sess-codex", resp.Header.Get("X-Shepherd-Session"))

	resp = nil
	rs := e2eRunResponsesStream(t, ctx, rc, e2eResponsesParams(), ooption.WithResponseInto(&resp))
	require.NoError(t, rs.err)
	require.NotNil(t, resp)
	require.Equal(t, "sess-codex", resp.Header.Get("X-Shepherd-Session"))
}
