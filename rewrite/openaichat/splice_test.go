package openaichat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func chatSpliceFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "openai_chat", name))
	require.NoError(t, err)
	return string(b)
}

// chatSpliceFeed feeds sse to s one byte at a time and returns what s emitted.
func chatSpliceFeed(s rewrite.StreamSplicer, sse string) ([]byte, error) {
	return chatSpliceFeedFrom(s, iotest.OneByteReader(strings.NewReader(sse)))
}

func chatSpliceFeedFrom(s rewrite.StreamSplicer, src io.Reader) ([]byte, error) {
	r := rewrite.NewReader(src)
	var out []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b, err := s.Feed(&ev)
		if err != nil {
			return out, err
		}
		out = append(out, b...)
	}
}

func chatMustSpliceFeed(t *testing.T, s rewrite.StreamSplicer, sse string) []byte {
	t.Helper()
	out, err := chatSpliceFeed(s, sse)
	require.NoError(t, err)
	require.True(t, s.Done())
	return out
}

// chatSSEData returns the data of every event of an SSE stream.
func chatSSEData(t testing.TB, b []byte) []string {
	t.Helper()
	r := rewrite.NewReader(bytes.NewReader(b))
	var out []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if ev.HasData() {
			out = append(out, string(ev.Data))
		}
	}
}

// chatAccumulate runs the agent side: openai-go's accumulator over out.
func chatAccumulate(t *testing.T, out []byte) openai.ChatCompletion {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	sawDone := false
	for _, d := range chatSSEData(t, out) {
		require.False(t, sawDone, "data after [DONE]")
		if d == "[DONE]" {
			sawDone = true
			continue
		}
		var chunk openai.ChatCompletionChunk
		require.NoError(t, json.Unmarshal([]byte(d), &chunk), d)
		require.True(t, acc.AddChunk(chunk), d)
	}
	require.True(t, sawDone)
	return acc.ChatCompletion
}

// chatToolIndices lists the tool_calls indices of choice 0 in emission order.
func chatToolIndices(t testing.TB, out []byte) []int {
	t.Helper()
	var idx []int
	for _, d := range chatSSEData(t, out) {
		if d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					ToolCalls []struct {
						Index int `json:"index"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &c))
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				idx = append(idx, tc.Index)
			}
		}
	}
	return idx
}

func TestChatSplicerRegistered(t *testing.T) {
	require.True(t, (Descriptor.NewSplicer != nil))
	_, ok := Descriptor.NewSplicer().(*chatSplicer)
	require.True(t, ok)
}

func TestChatSplicePassThrough(t *testing.T) {
	in := chatSpliceFixture(t, "splice_text.sse")
	for _, tt := range []struct{ name, in string }{
		{"LF", in},
		{"CRLF", strings.ReplaceAll(in, "\n", "\r\n")},
		{"CR", strings.ReplaceAll(in, "\n", "\r")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := Descriptor.NewSplicer()
			out := chatMustSpliceFeed(t, s, tt.in)
			rel, err := s.Release(nil, nil)
			require.NoError(t, err)
			require.Empty(t, rel)
			fin, err := s.Finish()
			require.NoError(t, err)
			out = append(append(out, rel...), fin...)
			require.Equal(t, tt.in, string(out))
			require.Equal(t, 7, s.Events())
		})
	}
}

func TestChatSpliceRemoveFirstCall(t *testing.T) {
	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, chatSpliceFixture(t, "stream.sse"))
	// The text passes through as it arrives, byte for byte.
	require.Equal(t, 2, strings.Count(string(out), "data: "))
	require.True(t, strings.HasPrefix(chatSpliceFixture(t, "stream.sse"), string(out)))
	rel, err := s.Release([]int{0}, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	out = append(append(out, rel...), fin...)

	require.Equal(t, []int{0}, chatToolIndices(t, out))
	cc := chatAccumulate(t, out)
	require.Equal(t, "c1", cc.ID)
	require.Len(t, cc.Choices, 1)
	ch := cc.Choices[0]
	require.Equal(t, "Reading it.", ch.Message.Content)
	require.Len(t, ch.Message.ToolCalls, 1)
	tc := ch.Message.ToolCalls[0]
	require.Equal(t, "call_b", tc.ID)
	require.Equal(t, "read_file", tc.Function.Name)
	require.Equal(t, `{"path":"go.mod"}`, tc.Function.Arguments)
	require.Equal(t, "tool_calls", ch.FinishReason)
	require.EqualValues(t, 50, cc.Usage.PromptTokens)
	require.EqualValues(t, 12, cc.Usage.CompletionTokens)
	require.EqualValues(t, 62, cc.Usage.TotalTokens)
	// Nothing to edit in the terminal events: they are the upstream's bytes.
	require.True(t, strings.HasSuffix(chatSpliceFixture(t, "stream.sse"), string(fin)))
}

func TestChatSpliceReorder(t *testing.T) {
	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, chatSpliceFixture(t, "stream.sse"))
	reply, err := s.Reply()
	require.NoError(t, err)
	rel, err := s.Release(nil, []int{1})
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	out = append(append(out, rel...), fin...)

	require.Equal(t, []int{0, 1}, chatToolIndices(t, out))
	cc := chatAccumulate(t, out)
	calls := cc.Choices[0].Message.ToolCalls
	require.Len(t, calls, 2)
	require.Equal(t, "call_b", calls[0].ID)
	require.Equal(t, "call_a", calls[1].ID)
	require.Equal(t, `{"path":"main.go"}`, calls[1].Function.Arguments)

	// The agent gets what EditReply makes of the reply.
	edited, err := apitest.CodecFor(Descriptor).EditReply(reply, nil, []int{1})
	require.NoError(t, err)
	want, err := apitest.CodecFor(Descriptor).ParseReply(edited)
	require.NoError(t, err)
	require.Equal(t, want.ToolCalls[0].ID, calls[0].ID)
	require.Equal(t, string(want.ToolCalls[1].Args), calls[1].Function.Arguments)
}

func TestChatSpliceReply(t *testing.T) {
	s := Descriptor.NewSplicer()
	chatMustSpliceFeed(t, s, chatSpliceFixture(t, "stream.sse"))
	reply, err := s.Reply()
	require.NoError(t, err)
	require.JSONEq(t, chatSpliceFixture(t, "splice_reply.json"), string(reply))

	got, err := apitest.CodecFor(Descriptor).ParseReply(reply)
	require.NoError(t, err)
	require.Equal(t, &conv.Reply{
		Model: "gpt-4.1-2025-04-14", Text: "Reading it.",
		ToolCalls: []conv.ToolCall{
			{Index: 0, ID: "call_a", Name: "read_file", Args: []byte(`{"path":"main.go"}`)},
			{Index: 1, ID: "call_b", Name: "read_file", Args: []byte(`{"path":"go.mod"}`)},
		},
		Stop: conv.StopToolUse, RawStop: "tool_calls",
		Usage: conv.Usage{InputTokens: 50, OutputTokens: 12},
	}, got)
	ref, err := apitest.CodecFor(Descriptor).ParseReply([]byte(chatSpliceFixture(t, "splice_reply.json")))
	require.NoError(t, err)
	require.Equal(t, ref, got)

	msgs, err := apitest.CodecFor(Descriptor).ReplyAsMessages(reply)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.JSONEq(t, `{"role":"assistant","content":"Reading it.","tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"main.go\"}"}},
		{"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"go.mod\"}"}}]}`, string(msgs[0]))
}

func TestChatSpliceFollowUp(t *testing.T) {
	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, chatSpliceFixture(t, "splice_topic.sse"))
	// Only the role, split off the first tool-call chunk, reaches the agent.
	require.Equal(t, []string{`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"finish_reason":null}],"usage":null}`},
		chatSSEData(t, out))
	reply1, err := s.Reply()
	require.NoError(t, err)
	rel, err := s.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	s.Next()
	require.False(t, s.Done())
	out2 := chatMustSpliceFeed(t, s, chatSpliceFixture(t, "splice_followup.sse"))
	reply2, err := s.Reply()
	require.NoError(t, err)
	rel2, err := s.Release(nil, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	all := append(append(append(out, out2...), rel2...), fin...)

	for _, d := range chatSSEData(t, all) {
		if d != "[DONE]" {
			require.Contains(t, d, `"id":"c1"`)
			require.Contains(t, d, `"created":1,`)
		}
	}
	cc := chatAccumulate(t, all)
	require.Equal(t, "c1", cc.ID)
	require.Equal(t, "Started topic. Done.", cc.Choices[0].Message.Content)
	require.Empty(t, cc.Choices[0].Message.ToolCalls)
	require.Equal(t, "stop", cc.Choices[0].FinishReason)
	require.EqualValues(t, 140, cc.Usage.PromptTokens)
	require.EqualValues(t, 20, cc.Usage.CompletionTokens)
	require.EqualValues(t, 160, cc.Usage.TotalTokens)

	// The same as the non-streaming path: EditReply then MergeReplies.
	tc := apitest.CodecFor(Descriptor)
	e1, err := tc.EditReply(reply1, []int{0}, nil)
	require.NoError(t, err)
	merged, err := tc.MergeReplies(e1, reply2)
	require.NoError(t, err)
	want, err := apitest.CodecFor(Descriptor).ParseReply(merged)
	require.NoError(t, err)
	require.Equal(t, want.Text, cc.Choices[0].Message.Content)
	require.Equal(t, want.RawStop, cc.Choices[0].FinishReason)
	require.Equal(t, want.Usage.OutputTokens, cc.Usage.CompletionTokens)
}

// Calls kept over two streams are numbered on across them.
func TestChatSpliceFollowUpCalls(t *testing.T) {
	s := Descriptor.NewSplicer()
	crlf := strings.ReplaceAll(chatSpliceFixture(t, "stream.sse"), "\n", "\r\n")
	out := chatMustSpliceFeed(t, s, crlf)
	rel, err := s.Release([]int{0}, nil)
	require.NoError(t, err)
	out = append(out, rel...)
	s.Next()
	second := strings.ReplaceAll(crlf, `"id":"c1"`, `"id":"c9"`)
	second = strings.ReplaceAll(second, `"completion_tokens":12,"total_tokens":62`, `"completion_tokens":3,"total_tokens":80`)
	second = strings.ReplaceAll(second, `"prompt_tokens":50`, `"prompt_tokens":77`)
	out2 := chatMustSpliceFeed(t, s, second)
	require.NotContains(t, string(out2), `"role"`) // the preamble is dropped on a follow-up
	rel, err = s.Release([]int{1}, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	all := append(append(append(out, out2...), rel...), fin...)
	require.NotContains(t, strings.ReplaceAll(string(all), "\r\n", ""), "\n") // CRLF kept

	require.Equal(t, []int{0, 1}, chatToolIndices(t, all))
	cc := chatAccumulate(t, all)
	m := cc.Choices[0].Message
	require.Equal(t, "Reading it.Reading it.", m.Content)
	require.Len(t, m.ToolCalls, 2)
	require.Equal(t, "call_b", m.ToolCalls[0].ID)
	require.Equal(t, "call_a", m.ToolCalls[1].ID)
	require.Equal(t, "tool_calls", cc.Choices[0].FinishReason)
	require.EqualValues(t, 77, cc.Usage.PromptTokens)
	require.EqualValues(t, 15, cc.Usage.CompletionTokens)
	require.EqualValues(t, 92, cc.Usage.TotalTokens)
}

func TestChatSpliceStopWhenAllRemoved(t *testing.T) {
	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, chatSpliceFixture(t, "stream.sse"))
	rel, err := s.Release([]int{1, 0}, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	fin, err := s.Finish()
	require.NoError(t, err)
	cc := chatAccumulate(t, append(out, fin...))
	require.Equal(t, "stop", cc.Choices[0].FinishReason)
	require.Empty(t, cc.Choices[0].Message.ToolCalls)

	// length is kept: the agent must learn the reply was cut.
	s = Descriptor.NewSplicer()
	out = chatMustSpliceFeed(t, s, strings.ReplaceAll(chatSpliceFixture(t, "stream.sse"), `"tool_calls"}`, `"length"}`))
	_, err = s.Release([]int{0, 1}, nil)
	require.NoError(t, err)
	fin, err = s.Finish()
	require.NoError(t, err)
	require.Equal(t, "length", chatAccumulate(t, append(out, fin...)).Choices[0].FinishReason)
}

// Odd but valid shapes: text and calls in one chunk, the last fragment in the
// finish chunk, usage on the finish chunk, another choice, no [DONE].
func TestChatSpliceMixedChunks(t *testing.T) {
	const in = `data: {"id":"x","created":3,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{"}}]},"finish_reason":null}]}

data: {"id":"x","created":3,"model":"m","choices":[{"index":1,"delta":{"content":"other","tool_calls":[{"index":0,"id":"z"}]},"finish_reason":null}]}

data: {"id":"x","created":3,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}

`
	s := Descriptor.NewSplicer()
	out, err := chatSpliceFeed(s, in)
	require.NoError(t, err)
	require.False(t, s.Done())
	require.Equal(t, []string{
		`{"id":"x","created":3,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`,
		`{"id":"x","created":3,"model":"m","choices":[{"index":1,"delta":{"content":"other","tool_calls":[{"index":0,"id":"z"}]},"finish_reason":null}]}`,
	}, chatSSEData(t, out))
	reply, err := s.Reply()
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"x","object":"chat.completion","created":3,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null,
		"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, string(reply))
	rel, err := s.Release(nil, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"id":"x","object":"chat.completion.chunk","created":3,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"x","created":3,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
	}, chatSSEData(t, append(rel, fin...)))
}

func TestChatSpliceErrors(t *testing.T) {
	for _, bad := range []string{
		`{`,
		`[1]`,
		`{"choices":{}}`,
		`{"choices":[1]}`,
		`{"choices":[{"index":"0"}]}`,
		`{"choices":[{"index":0},{"index":0}]}`,
		`{"choices":[{"index":0,"delta":[]}]}`,
		`{"choices":[{"index":0,"delta":{"content":1}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":{}}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[1]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"a"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{}}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[],"tool_calls":[{"index":0}]}}]}`,
		`{"choices":[{"index":0,"finish_reason":1}]}`,
		`{"choices":[],"usage":1}`,
	} {
		s := Descriptor.NewSplicer()
		_, err := chatSpliceFeed(s, "data: "+bad+"\n\n")
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}

	s := Descriptor.NewSplicer()
	chatMustSpliceFeed(t, s, chatSpliceFixture(t, "stream.sse"))
	_, err := s.Release([]int{2}, nil)
	require.Error(t, err)
	_, err = s.Release([]int{0}, []int{0})
	require.Error(t, err)
	_, err = s.Release(nil, nil)
	require.NoError(t, err)
	_, err = s.Release(nil, nil)
	require.Error(t, err)
	_, err = s.Finish()
	require.NoError(t, err)
	_, err = s.Finish()
	require.Error(t, err)
	_, err = s.Feed(&rewrite.Event{Data: []byte("[DONE]")})
	require.Error(t, err)
}

// An error chunk reaches the agent and ends the stream.
func TestChatSpliceErrorChunk(t *testing.T) {
	const in = "data: {\"id\":\"e\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"
	s := Descriptor.NewSplicer()
	out, err := chatSpliceFeed(s, in)
	require.NoError(t, err)
	require.Equal(t, in, string(out))
	require.True(t, s.Done())
	fin, err := s.Finish()
	require.NoError(t, err)
	require.Empty(t, fin)
}

// A stream cut inside its last event: what follows stays a separate event.
func TestChatSpliceCutEvent(t *testing.T) {
	s := Descriptor.NewSplicer()
	out, err := chatSpliceFeed(s, "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]")
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	require.Equal(t, []string{`{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}]}`, "[DONE]"}, chatSSEData(t, append(out, fin...)))
	require.True(t, bytes.HasSuffix(fin, []byte("\n\n")))
}

// FuzzChatSplicer feeds two fuzzed streams through a splicer. ctrl picks
// each call's fate (keep, remove, first) and whether there is a follow-up
// (0x80), and whether it is a continuation (0x40 too).
func FuzzChatSplicer(f *testing.F) {
	text := chatSpliceFixture(f, "splice_text.sse")
	calls := chatSpliceFixture(f, "stream.sse")
	topic := chatSpliceFixture(f, "splice_topic.sse")
	follow := chatSpliceFixture(f, "splice_followup.sse")
	f.Add(text, "", []byte{})
	f.Add(calls, "", []byte{1, 0})
	f.Add(calls, calls, []byte{2, 0, 0x80, 1, 2})
	f.Add(topic, follow, []byte{1, 0x80})
	f.Add(strings.ReplaceAll(calls, "\n", "\r\n"), topic, []byte{0, 2, 0x80, 0})
	f.Add("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3},{\"index\":1.5}]},\"finish_reason\":\"x\"}]}\n\ndata: [DONE]", "", []byte{2, 2})
	cut := strings.ReplaceAll(calls, `"tool_calls"}`, `"length"}`)
	f.Add(strings.ReplaceAll(text, `"stop"}`, `"length"}`), text, []byte{0xc0})
	f.Add(cut, strings.ReplaceAll(calls, `"content":"Reading`, `"reasoning_content":"hm"},"finish_reason":null}]}`+"\n\n"+`data: {"choices":[{"index":0,"delta":{"content":"Reading`), []byte{1, 1, 0xc0, 2, 0})
	f.Add(cut, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"it.\"}}]}\n\ndata: {\"error\":{}}\n\n", []byte{1, 1, 0xc0})
	f.Add(text, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""+strings.Repeat("x", 300)+"\"},\"finish_reason\":\"stop\"}]}\n\n", []byte{0xc0})
	f.Fuzz(func(t *testing.T, s1, s2 string, ctrl []byte) {
		s := Descriptor.NewSplicer()
		var out []byte
		kept := 0
		next := func() byte {
			if len(ctrl) == 0 {
				return 0
			}
			b := ctrl[0]
			ctrl = ctrl[1:]
			return b
		}
		stream := func(sse string) bool {
			// Event boundaries do not depend on chunking (sse_test.go), so
			// the fuzzer reads whole strings for speed.
			b, err := chatSpliceFeedFrom(s, strings.NewReader(sse))
			out = append(out, b...)
			if err != nil {
				return false
			}
			reply, err := s.Reply()
			require.NoError(t, err)
			r, err := apitest.CodecFor(Descriptor).ParseReply(reply)
			require.NoError(t, err, string(reply))
			_, err = apitest.CodecFor(Descriptor).ReplyAsMessages(reply)
			require.NoError(t, err)
			var remove, first []int
			for i := range r.ToolCalls {
				switch next() % 3 {
				case 1:
					remove = append(remove, i)
				case 2:
					first = append(first, i)
				}
			}
			b, err = s.Release(remove, first)
			require.NoError(t, err)
			out = append(out, b...)
			kept += len(r.ToolCalls) - len(remove)
			return true
		}
		if !stream(s1) {
			return
		}
		if b := next(); b&0x80 != 0 {
			if b&0x40 != 0 {
				s.(rewrite.ContinueSplicer).Continue()
			} else {
				s.Next()
			}
			if !stream(s2) {
				return
			}
		}
		b, err := s.Finish()
		require.NoError(t, err)
		out = append(out, b...)

		// Every emitted event is a JSON chunk or [DONE]; the choice-0 tool
		// calls are numbered 0, 1, 2, … in order of first appearance.
		r := rewrite.NewReader(bytes.NewReader(out))
		seen := map[float64]bool{}
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			d := bytes.TrimSpace(ev.Data)
			if len(d) == 0 || bytes.Equal(d, rewrite.DoneData) {
				continue
			}
			require.True(t, json.Valid(d), "%q", d)
			var chunk map[string]any
			if json.Unmarshal(d, &chunk) != nil {
				continue // valid JSON but not an object: an odd pass-through
			}
			choices, _ := chunk["choices"].([]any)
			for _, c := range choices {
				cm, _ := c.(map[string]any)
				if idx, ok := cm["index"]; ok && idx != nil && idx != float64(0) {
					continue
				}
				delta, _ := cm["delta"].(map[string]any)
				tcs, _ := delta["tool_calls"].([]any)
				for _, tc := range tcs {
					tm, _ := tc.(map[string]any)
					i, ok := tm["index"].(float64)
					require.True(t, ok, "%q", d)
					if !seen[i] {
						require.Equal(t, float64(len(seen)), i, "%q", d)
						seen[i] = true
					}
				}
			}
		}
		require.Len(t, seen, kept)
	})
}
