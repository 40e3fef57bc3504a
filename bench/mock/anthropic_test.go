package mock_test

import (
	"errors"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func anthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
}

func checkAnthropicRich(t *testing.T, msg *anthropic.Message, id string) {
	t.Helper()
	require.Equal(t, id, msg.ID)
	require.Equal(t, anthropic.Model("claude-sonnet-4-5"), msg.Model)
	require.Len(t, msg.Content, 4)

	require.Equal(t, "thinking", msg.Content[0].Type)
	require.Equal(t, richThinking, msg.Content[0].Thinking)
	require.Equal(t, richSignature, msg.Content[0].Signature)

	require.Equal(t, "text", msg.Content[1].Type)
	require.Equal(t, richText, msg.Content[1].Text)

	require.Equal(t, "tool_use", msg.Content[2].Type)
	require.Equal(t, "toolu_"+strings.TrimPrefix(id, "msg_")+"_0", msg.Content[2].ID)
	require.Equal(t, "read_file", msg.Content[2].Name)
	jsonEq(t, `{"path":"main.go"}`, string(msg.Content[2].Input))

	require.Equal(t, "tool_use", msg.Content[3].Type)
	require.Equal(t, "call_custom", msg.Content[3].ID)
	require.Equal(t, "grep", msg.Content[3].Name)
	jsonEq(t, `{"pattern":"func main","paths":["a","b"],"n":3}`, string(msg.Content[3].Input))

	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Equal(t, int64(100), msg.Usage.InputTokens)
	require.Equal(t, int64(45), msg.Usage.OutputTokens)
	require.Equal(t, int64(7), msg.Usage.CacheReadInputTokens)
	require.Equal(t, int64(3), msg.Usage.CacheCreationInputTokens)
}

func TestAnthropicMessage(t *testing.T) {
	s := start(t, mock.Options{})
	s.Script(richReply())
	c := anthropicClient(s)
	msg, err := c.Messages.New(ctxT(t), anthropicParams())
	require.NoError(t, err)
	checkAnthropicRich(t, msg, "msg_mock000001")

	last, ok := s.Last()
	require.True(t, ok)
	require.Equal(t, "/v1/messages", last.Path)
	require.Equal(t, "anthropic", last.API)
	require.False(t, last.Stream)
	require.Equal(t, "sk-ant-test", last.Header.Get("X-Api-Key"))
}

func TestAnthropicStream(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 5})
	s.Script(richReply())
	c := anthropicClient(s)
	stream := c.Messages.NewStreaming(ctxT(t), anthropicParams())
	defer stream.Close()
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		require.NoError(t, msg.Accumulate(ev))
	}
	require.NoError(t, stream.Err())
	checkAnthropicRich(t, &msg, "msg_mock000001")
	require.Equal(t, "message_start", types[0])
	require.Equal(t, "message_delta", types[len(types)-2])
	require.Equal(t, "message_stop", types[len(types)-1])
	require.Greater(t, len(types), 20, "text split in 5-character deltas")

	last, _ := s.Last()
	require.True(t, last.Stream)
}

func TestAnthropicStopReasonsAndDefaults(t *testing.T) {
	s := start(t, mock.Options{})
	s.Script(
		mock.Reply{Text: "cut", Stop: "max_tokens"},
		mock.Reply{Text: "seq", Stop: "stop_sequence", StopSequence: "###"},
		mock.Reply{Text: "no", Stop: "refusal"},
	)
	c := anthropicClient(s)
	ctx := ctxT(t)

	m, err := c.Messages.New(ctx, anthropicParams())
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonMaxTokens, m.StopReason)

	st := c.Messages.NewStreaming(ctx, anthropicParams())
	var acc anthropic.Message
	for st.Next() {
		require.NoError(t, acc.Accumulate(st.Current()))
	}
	require.NoError(t, st.Err())
	require.Equal(t, anthropic.StopReasonStopSequence, acc.StopReason)
	require.Equal(t, "###", acc.StopSequence)

	m, err = c.Messages.New(ctx, anthropicParams())
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonRefusal, m.StopReason)

	// Queue empty: the default reply, with estimated usage.
	m, err = c.Messages.New(ctx, anthropicParams())
	require.NoError(t, err)
	require.Equal(t, "ok", m.Content[0].Text)
	require.Equal(t, anthropic.StopReasonEndTurn, m.StopReason)
	require.Positive(t, m.Usage.InputTokens)
	require.Equal(t, int64(1), m.Usage.OutputTokens)
	require.Equal(t, "msg_mock000004", m.ID)
}

func TestAnthropicErrors(t *testing.T) {
	s := start(t, mock.Options{})
	c := anthropicClient(s)
	ctx := ctxT(t)

	s.Script(mock.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: "7"})
	_, err := c.Messages.New(ctx, anthropicParams())
	var apierr *anthropic.Error
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, 429, apierr.StatusCode)
	require.Equal(t, "7", apierr.Response.Header.Get("Retry-After"))
	require.Equal(t, "req_mock000001", apierr.RequestID)
	require.Contains(t, apierr.RawJSON(), `"type":"rate_limit_error"`)
	require.Contains(t, apierr.RawJSON(), `"message":"slow down"`)

	// A stream request that fails before the stream starts gets a JSON error.
	s.Script(mock.Reply{Status: 529})
	st := c.Messages.NewStreaming(ctx, anthropicParams())
	require.False(t, st.Next())
	require.ErrorAs(t, st.Err(), &apierr)
	require.Equal(t, 529, apierr.StatusCode)
	require.Contains(t, apierr.RawJSON(), "overloaded_error")

	// Mid-stream error event after three events.
	s.Script(mock.Reply{Text: strings.Repeat("abcdefgh", 10), ErrorAfterEvents: 3})
	st = c.Messages.NewStreaming(ctx, anthropicParams())
	n := 0
	for st.Next() {
		n++
	}
	require.Equal(t, 3, n)
	require.Error(t, st.Err())
	require.Contains(t, st.Err().Error(), "overloaded_error")

	// Connection cut after two events: no message_stop, a transport error.
	s.Script(mock.Reply{Text: strings.Repeat("abcdefgh", 10), CutAfterEvents: 2})
	st = c.Messages.NewStreaming(ctx, anthropicParams())
	var types []string
	for st.Next() {
		types = append(types, st.Current().Type)
	}
	require.Equal(t, []string{"message_start", "content_block_start"}, types)
	require.Error(t, st.Err())
	require.False(t, errors.As(st.Err(), &apierr), "a cut is not an API error: %v", st.Err())
}

func TestAnthropicCountTokensAndModels(t *testing.T) {
	s := start(t, mock.Options{CountTokens: 42})
	c := anthropicClient(s)
	ctx := ctxT(t)
	n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
		Model:    "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	require.NoError(t, err)
	require.Equal(t, int64(42), n.InputTokens)
	require.Equal(t, uint64(0), s.Served(), "count_tokens does not consume the script")

	page, err := c.Models.List(ctx, anthropic.ModelListParams{})
	require.NoError(t, err)
	require.Len(t, page.Data, 3)
	require.Equal(t, "claude-sonnet-4-5", page.Data[0].ID)
}
