package proxy_test

// The 20-turn topic-chapter session of topics_long_test.go driven by the
// official SDKs, alternating streamed and non-streamed turns in one session:
// the ledger must splice the model's view the same way whichever shape the
// previous reply had, so every upstream request still extends the previous
// one byte for byte.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
)

// topicSendUnary is the non-streaming counterpart of topicStreamSession.send:
// it sends the history with the SDK's non-streaming call (New /
// GenerateContent) and appends the reply to the history the way the SDK's
// types make it natural (ToParam of the reply, or the candidate's content).
func topicSendUnary(t *testing.T, ctx context.Context, s topicStreamSession) topicStreamReply {
	t.Helper()
	return s.sendUnary(t, ctx)
}

func (s *anthTopicSession) sendUnary(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	var r topicStreamReply
	msg, err := s.c.Messages.New(ctx, s.p)
	if err != nil {
		r.err = err
		return r
	}
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

func (s *chatTopicSession) sendUnary(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	var r topicStreamReply
	p := s.p
	// stream_options is only allowed on streamed requests.
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	resp, err := s.c.Chat.Completions.New(ctx, p)
	if err != nil {
		r.err = err
		return r
	}
	require.Len(t, resp.Choices, 1)
	m := resp.Choices[0].Message
	r.text = m.Content
	for _, tc := range m.ToolCalls {
		r.calls = append(r.calls, mock.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
	}
	r.stop = resp.Choices[0].FinishReason
	s.p.Messages = append(s.p.Messages, m.ToParam())
	return r
}

func (s *respTopicSession) sendUnary(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	var r topicStreamReply
	resp, err := s.c.Responses.New(ctx, s.p)
	if err != nil {
		r.err = err
		return r
	}
	for _, item := range resp.Output {
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
	r.stop = string(resp.Status)
	return r
}

func (s *geminiTopicSession) sendUnary(t *testing.T, ctx context.Context) topicStreamReply {
	t.Helper()
	var r topicStreamReply
	resp, err := s.c.Models.GenerateContent(ctx, "gemini-test", s.contents, s.cfg)
	if err != nil {
		r.err = err
		return r
	}
	require.Len(t, resp.Candidates, 1)
	cand := resp.Candidates[0]
	require.NotNil(t, cand.Content)
	for _, p := range cand.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			r.calls = append(r.calls, mock.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: topicJSON(t, p.FunctionCall.Args)})
		case !p.Thought:
			r.text += p.Text
		}
	}
	r.stop = string(cand.FinishReason)
	s.contents = append(s.contents, cand.Content)
	return r
}

func topicJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestTopicsTwentyTurnsMixedSDK drives a 20-turn session per API through
// the official SDK, alternating streamed (even turns) and non-streamed (odd
// turns) requests, with the mock cycling through every turn shape
// (scriptTurn): the agent never sees create_new_topic, every streamed reply
// is well formed for the SDK, and every upstream request extends the
// previous one byte for byte across the change of shape.
func TestTopicsTwentyTurnsMixedSDK(t *testing.T) {
	for _, sa := range topicStreamAPIs() {
		t.Run(sa.name, func(t *testing.T) {
			t.Parallel()
			api := topicAPINamed(t, sa.name)
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
			sessionID := "mixed-" + sa.name
			wire := &topicWireLog{}
			t.Cleanup(func() {
				if t.Failed() {
					wire.dump(t)
					for i, r := range h.mock.Requests() {
						t.Logf("upstream request %d (stream=%v): %s?%s\n%s", i+1, r.Stream, r.Path, r.Query, r.Body)
					}
					t.Logf("ledger entries applied %g, missed %g",
						metricValue(t, h, "shepherd_ledger_entries_total", `result="applied"`),
						metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
				}
			})
			ctx := e2eCtx(t)
			s := sa.session(t, h.URL, map[string]string{"X-Session-Id": sessionID}, &http.Client{Transport: wire})

			s.user("start the task")
			seen := 0
			for k := 0; k < 20; k++ {
				scriptTurn(h.mock, k)
				stream := k%2 == 0
				var reply topicStreamReply
				if stream {
					reply = s.send(t, ctx)
				} else {
					reply = topicSendUnary(t, ctx, s)
				}
				require.NoError(t, reply.err, "turn %d (stream=%v); stream events: %v", k, stream, reply.events)
				for _, c := range reply.calls {
					require.NotEqual(t, "create_new_topic", c.Name, "turn %d: the agent never sees create_new_topic", k)
				}

				// What the agent got, per shape of scriptTurn.
				read := []mock.ToolCall{{ID: fmt.Sprintf("c%d", k), Name: "Read"}}
				var names []mock.ToolCall
				for _, c := range reply.calls {
					names = append(names, mock.ToolCall{ID: c.ID, Name: c.Name})
				}
				upstream := 1
				switch k % 4 {
				case 0:
					upstream = 2 // the lone topic call is answered and followed up
					require.Equal(t, fmt.Sprintf("Starting Phase %d.", k), reply.text, "turn %d", k)
					require.Empty(t, reply.calls, "turn %d", k)
				case 1, 3:
					require.Equal(t, read, names, "turn %d: only the agent's own call", k)
					require.Empty(t, reply.text, "turn %d", k)
				case 2:
					require.Equal(t, fmt.Sprintf("Read it (%d).", k), reply.text, "turn %d", k)
					require.Empty(t, reply.calls, "turn %d", k)
				}
				if len(reply.calls) > 0 {
					require.Equal(t, sa.toolUse, reply.stop, "turn %d", k)
				} else {
					require.Equal(t, sa.endStop, reply.stop, "turn %d", k)
				}

				// The upstream requests of this turn have the turn's shape.
				reqs := h.mock.Requests()
				require.Len(t, reqs, seen+upstream, "turn %d", k)
				for i, r := range reqs[seen:] {
					require.Equal(t, stream, r.Stream, "turn %d, upstream request %d", k, seen+i+1)
					if stream {
						require.Equal(t, sa.path, r.Path, "turn %d", k)
						require.Equal(t, sa.query, r.Query, "turn %d", k)
					} else {
						require.Equal(t, api.path, r.Path, "turn %d", k)
					}
				}
				seen = len(reqs)
				require.Zero(t, h.mock.Pending(), "turn %d used its scripted replies", k)

				if len(reply.calls) == 0 {
					s.user(fmt.Sprintf("continue %d", k))
					continue
				}
				for _, c := range reply.calls {
					s.toolResult(c.ID, c.Name)
				}
			}

			reqs := h.mock.Requests()
			require.Len(t, reqs, 25, "20 turns plus one follow-up for each of the 5 lone topic calls")
			for i := 1; i < len(reqs); i++ {
				func() {
					t.Helper()
					defer func() {
						if t.Failed() {
							t.Logf("append-only broken between upstream requests %d (stream=%v) and %d (stream=%v)",
								i, reqs[i-1].Stream, i+1, reqs[i].Stream)
						}
					}()
					requireAppendOnly(t, api, reqs[i-1].Body, reqs[i].Body)
				}()
			}
			last := string(reqs[len(reqs)-1].Body)
			require.Equal(t, 10, countResults(last, "Topic changed to:"), "every topic result stays in the model's history")
			require.Contains(t, last, "[Active Topic: Phase 17]")

			sess, err := h.store.Get(t.Context(), state.Key{Tenant: streamTenant(t, h, sessionID), Session: sessionID})
			require.NoError(t, err)
			require.Equal(t, "Phase 17", topicsOf(t, sess).Topic)
			require.Len(t, topicsOf(t, sess).Chapters, 10)
			require.Equal(t, int64(20), sess.Requests)
		})
	}
}
