package mock_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
}

func checkChatRich(t *testing.T, cc *openai.ChatCompletion, id string) {
	t.Helper()
	require.Equal(t, id, cc.ID)
	require.Equal(t, "gpt-4o", cc.Model)
	require.Equal(t, int64(mock.DefaultCreated), cc.Created)
	require.Len(t, cc.Choices, 1)
	ch := cc.Choices[0]
	require.Equal(t, richText, ch.Message.Content)
	require.Equal(t, "tool_calls", ch.FinishReason)
	require.Len(t, ch.Message.ToolCalls, 2)
	tc := ch.Message.ToolCalls[0]
	require.Equal(t, "call_"+strings.TrimPrefix(id, "chatcmpl-")+"_0", tc.ID)
	require.Equal(t, "read_file", tc.Function.Name)
	require.Equal(t, `{"path":"main.go"}`, tc.Function.Arguments)
	tc = ch.Message.ToolCalls[1]
	require.Equal(t, "call_custom", tc.ID)
	require.Equal(t, "grep", tc.Function.Name)
	require.Equal(t, `{"pattern":"func main","paths":["a","b"],"n":3}`, tc.Function.Arguments)

	require.Equal(t, int64(110), cc.Usage.PromptTokens)
	require.Equal(t, int64(45), cc.Usage.CompletionTokens)
	require.Equal(t, int64(155), cc.Usage.TotalTokens)
	require.Equal(t, int64(7), cc.Usage.PromptTokensDetails.CachedTokens)
	require.Equal(t, int64(12), cc.Usage.CompletionTokensDetails.ReasoningTokens)
}

func TestChatCompletion(t *testing.T) {
	s := start(t, mock.Options{})
	s.Script(richReply())
	c := openaiClient(s)
	cc, err := c.Chat.Completions.New(ctxT(t), chatParams())
	require.NoError(t, err)
	checkChatRich(t, cc, "chatcmpl-mock000001")
	// Thinking is sent as reasoning_content, kept by the SDK as an extra field.
	rc, ok := cc.Choices[0].Message.JSON.ExtraFields["reasoning_content"]
	require.True(t, ok)
	require.Equal(t, mustJSON(t, richThinking), rc.Raw())
}

func TestChatStream(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 7})
	s.Script(richReply())
	c := openaiClient(s)
	p := chatParams()
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctxT(t), p)
	defer st.Close()
	acc := openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	var chunks []openai.ChatCompletionChunk
	for st.Next() {
		ch := st.Current()
		chunks = append(chunks, ch)
		require.True(t, acc.AddChunk(ch))
		if len(ch.Choices) > 0 {
			if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var s string
				require.NoError(t, jsonUnmarshalString(f.Raw(), &s))
				reasoning.WriteString(s)
			}
		}
	}
	require.NoError(t, st.Err())
	checkChatRich(t, &acc.ChatCompletion, "chatcmpl-mock000001")
	require.Equal(t, richThinking, reasoning.String())
	last := chunks[len(chunks)-1]
	require.Empty(t, last.Choices, "usage chunk has choices: []")
	require.Equal(t, int64(155), last.Usage.TotalTokens)
}

func TestChatStreamWithoutUsage(t *testing.T) {
	s := start(t, mock.Options{})
	s.Script(mock.Reply{Text: "hello there", Stop: "max_tokens"})
	resp := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true}`)
	evs := parseSSE(t, readAll(t, resp))
	require.Equal(t, "[DONE]", evs[len(evs)-1].data)
	for _, ev := range evs {
		require.NotContains(t, ev.data, `"usage"`)
		require.Empty(t, ev.name, "chat streams are data-only")
	}
	require.Contains(t, evs[len(evs)-2].data, `"finish_reason":"length"`)
}

func TestChatErrors(t *testing.T) {
	s := start(t, mock.Options{})
	c := openaiClient(s)
	ctx := ctxT(t)

	s.Script(mock.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: "3"})
	_, err := c.Chat.Completions.New(ctx, chatParams())
	var apierr *openai.Error
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, 429, apierr.StatusCode)
	require.Equal(t, "slow down", apierr.Message)
	require.Equal(t, "rate_limit_exceeded", apierr.Code)
	require.Equal(t, "3", apierr.Response.Header.Get("Retry-After"))

	s.Script(mock.Reply{Status: 500})
	st := c.Chat.Completions.NewStreaming(ctx, chatParams())
	require.False(t, st.Next())
	require.ErrorAs(t, st.Err(), &apierr)
	require.Equal(t, 500, apierr.StatusCode)
	require.Equal(t, "server_error", apierr.Type)

	s.Script(mock.Reply{Text: strings.Repeat("x", 100), ErrorAfterEvents: 2, ErrorMessage: "boom"})
	st = c.Chat.Completions.NewStreaming(ctx, chatParams())
	n := 0
	for st.Next() {
		n++
	}
	require.Equal(t, 2, n)
	require.Error(t, st.Err())
	require.Contains(t, st.Err().Error(), "boom")
}

func TestChatModels(t *testing.T) {
	s := start(t, mock.Options{Models: []string{"gpt-a", "gpt-b"}})
	c := openaiClient(s)
	page, err := c.Models.List(ctxT(t))
	require.NoError(t, err)
	require.Len(t, page.Data, 2)
	require.Equal(t, "gpt-b", page.Data[1].ID)
}

func responsesParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	}
}

func checkResponseRich(t *testing.T, r *responses.Response, key string) {
	t.Helper()
	require.Equal(t, "resp_"+key, r.ID)
	require.Equal(t, "gpt-5", string(r.Model))
	require.Equal(t, responses.ResponseStatusCompleted, r.Status)
	require.Equal(t, float64(mock.DefaultCreated), r.CreatedAt)
	require.Equal(t, richText, r.OutputText())
	require.Len(t, r.Output, 4)

	rs := r.Output[0].AsReasoning()
	require.Equal(t, "reasoning", r.Output[0].Type)
	require.Equal(t, "rs_"+key, rs.ID)
	require.Len(t, rs.Summary, 1)
	require.Equal(t, richThinking, rs.Summary[0].Text)
	require.Equal(t, richSignature, rs.EncryptedContent)

	require.Equal(t, "message", r.Output[1].Type)
	require.Equal(t, "msg_"+key, r.Output[1].ID)

	fc := r.Output[2].AsFunctionCall()
	require.Equal(t, "function_call", r.Output[2].Type)
	require.Equal(t, "fc_"+key+"_0", fc.ID)
	require.Equal(t, "call_"+key+"_0", fc.CallID)
	require.Equal(t, "read_file", fc.Name)
	require.Equal(t, `{"path":"main.go"}`, fc.Arguments)
	fc = r.Output[3].AsFunctionCall()
	require.Equal(t, "call_custom", fc.CallID)
	require.Equal(t, "grep", fc.Name)
	require.Equal(t, `{"pattern":"func main","paths":["a","b"],"n":3}`, fc.Arguments)

	require.Equal(t, int64(110), r.Usage.InputTokens)
	require.Equal(t, int64(7), r.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, int64(45), r.Usage.OutputTokens)
	require.Equal(t, int64(12), r.Usage.OutputTokensDetails.ReasoningTokens)
	require.Equal(t, int64(155), r.Usage.TotalTokens)
}

func TestResponses(t *testing.T) {
	s := start(t, mock.Options{})
	s.Script(richReply(), mock.Reply{Text: "truncated", Stop: "max_tokens"})
	c := openaiClient(s)
	r, err := c.Responses.New(ctxT(t), responsesParams())
	require.NoError(t, err)
	checkResponseRich(t, r, "mock000001")

	r, err = c.Responses.New(ctxT(t), responsesParams())
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusIncomplete, r.Status)
	require.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	require.Equal(t, "truncated", r.OutputText())
}

func TestResponsesStream(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 6})
	s.Script(richReply())
	c := openaiClient(s)
	st := c.Responses.NewStreaming(ctxT(t), responsesParams())
	defer st.Close()
	var (
		types          []string
		text, summary  strings.Builder
		args           = map[string]*strings.Builder{}
		final          *responses.Response
		addedItemTypes []string
	)
	for i := 0; st.Next(); i++ {
		ev := st.Current()
		require.Equal(t, int64(i), ev.SequenceNumber, "sequence numbers rise from 0")
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.reasoning_summary_text.delta":
			summary.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			if args[ev.ItemID] == nil {
				args[ev.ItemID] = &strings.Builder{}
			}
			args[ev.ItemID].WriteString(ev.Delta)
		case "response.function_call_arguments.done":
			require.Equal(t, ev.Arguments, args[ev.ItemID].String())
		case "response.output_item.added":
			addedItemTypes = append(addedItemTypes, ev.Item.Type)
		case "response.completed":
			r := ev.Response
			final = &r
		}
	}
	require.NoError(t, st.Err())
	require.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.reasoning_summary_part.added"}, types[:4])
	require.Equal(t, "response.completed", types[len(types)-1])
	require.Equal(t, []string{"reasoning", "message", "function_call", "function_call"}, addedItemTypes)
	require.Equal(t, richText, text.String())
	require.Equal(t, richThinking, summary.String())
	require.Equal(t, `{"path":"main.go"}`, args["fc_mock000001_0"].String())
	require.NotNil(t, final)
	checkResponseRich(t, final, "mock000001")
	for _, want := range []string{"response.content_part.added", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.reasoning_summary_text.done",
		"response.reasoning_summary_part.done"} {
		require.Contains(t, types, want)
	}
}

func TestResponsesStreamIncompleteAndErrors(t *testing.T) {
	s := start(t, mock.Options{})
	c := openaiClient(s)
	ctx := ctxT(t)

	s.Script(mock.Reply{Text: "partial answer", Stop: "max_tokens"})
	st := c.Responses.NewStreaming(ctx, responsesParams())
	var last responses.ResponseStreamEventUnion
	for st.Next() {
		last = st.Current()
	}
	require.NoError(t, st.Err())
	require.Equal(t, "response.incomplete", last.Type)
	require.Equal(t, responses.ResponseStatusIncomplete, last.Response.Status)
	require.Equal(t, "max_output_tokens", last.Response.IncompleteDetails.Reason)

	s.Script(mock.Reply{Status: 401})
	_, err := c.Responses.New(ctx, responsesParams())
	var apierr *openai.Error
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, 401, apierr.StatusCode)
	require.Equal(t, "invalid_api_key", apierr.Code)

	s.Script(mock.Reply{Text: "some text here", ErrorAfterEvents: 4, ErrorMessage: "upstream died"})
	st = c.Responses.NewStreaming(ctx, responsesParams())
	var types []string
	for st.Next() {
		last = st.Current()
		types = append(types, last.Type)
	}
	require.NoError(t, st.Err())
	require.Len(t, types, 5)
	require.Equal(t, "error", last.Type)
	require.Equal(t, "server_error", last.Code)
	require.Equal(t, "upstream died", last.Message)
	require.Equal(t, int64(4), last.SequenceNumber)
}
