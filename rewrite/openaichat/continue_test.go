package openaichat

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestChatContinuer(t *testing.T) {
	cc, ok := rewrite.Continuer(apitest.CodecFor(Descriptor))
	require.True(t, ok)
	require.IsType(t, chatCodec{views: apitest.Views}, cc)
	_, ok = Descriptor.NewSplicer().(rewrite.ContinueSplicer)
	require.True(t, ok)
}

func TestChatContinuationMessages(t *testing.T) {
	cc, _ := rewrite.Continuer(apitest.CodecFor(Descriptor))
	const calls = `"tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]`
	tests := []struct {
		name, reply string
		prefill     bool
		want        string // "" when hasText is false
	}{
		{"calls dropped, reasoning and text byte for byte",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Caf\u00e9 \"ok\" \n","reasoning_content":"think\u2028","refusal":null,` + calls + `},"finish_reason":"length"}]}`,
			false, `{"role":"assistant","content":"Caf\u00e9 \"ok\" \n","reasoning_content":"think\u2028"}`},
		{"prefill trims escaped and literal whitespace",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Caf\u00e9 \"ok\" \n\t\u0020 \u00a0\r","reasoning_content":"think",` + calls + `},"finish_reason":"length"}]}`,
			true, `{"role":"assistant","content":"Caf\u00e9 \"ok\"","reasoning_content":"think"}`},
		{"prefill without trailing whitespace is unchanged",
			`{"choices":[{"message":{"role":"assistant","content":"a\\n","refusal":"no"}}]}`,
			true, `{"role":"assistant","content":"a\\n","refusal":"no"}`},
		{"function_call dropped",
			`{"choices":[{"message":{"content":"Let me see.","function_call":{"name":"f","arguments":"{"}}}]}`,
			false, `{"role":"assistant","content":"Let me see."}`},
		{"prefill drops emptied text parts",
			`{"choices":[{"message":{"content":[{"type":"text","text":"A b "},{"type":"text","text":" \n"}]}}]}`,
			true, `{"role":"assistant","content":[{"type":"text","text":"A b"}]}`},
		{"parts without prefill",
			`{"choices":[{"message":{"content":[{"type":"text","text":""},{"type":"text","text":" "}]}}]}`,
			false, `{"role":"assistant","content":[{"type":"text","text":""},{"type":"text","text":" "}]}`},
		{"only a truncated call", `{"choices":[{"message":{"role":"assistant","content":null,"reasoning_content":"r",` + calls + `},"finish_reason":"length"}]}`, false, ""},
		{"only a truncated call, prefill", `{"choices":[{"message":{"role":"assistant",` + calls + `},"finish_reason":"length"}]}`, true, ""},
		{"empty text", `{"choices":[{"message":{"content":"",` + calls + `}}]}`, false, ""},
		{"whitespace only, prefill", `{"choices":[{"message":{"content":" \n ",` + calls + `}}]}`, true, ""},
		{"whitespace parts only, prefill", `{"choices":[{"message":{"content":[{"type":"text","text":" "},{"type":"text","text":"\n"}]}}]}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == "" {
				in := []byte(tt.reply)
				items, hasText, err := cc.ContinuationMessages(in, tt.prefill)
				require.NoError(t, err)
				require.False(t, hasText)
				require.Nil(t, items)
				require.Equal(t, tt.reply, string(in))
				return
			}
			var hasText bool
			items, err := apitest.CheckItemsOut(t, []byte(tt.reply), func(b []byte) ([][]byte, error) {
				items, ht, err := cc.ContinuationMessages(b, tt.prefill)
				hasText = ht
				return items, err
			})
			require.NoError(t, err)
			require.True(t, hasText)
			require.Equal(t, []string{tt.want}, apitest.Strings(items))
		})
	}
	// Whitespace-only text is text without prefill.
	_, hasText, err := cc.ContinuationMessages([]byte(`{"choices":[{"message":{"content":" "}}]}`), false)
	require.NoError(t, err)
	require.True(t, hasText)
	for _, bad := range []string{`{`, `{"choices":[]}`, `{"choices":[{"message":{"tool_calls":1}}]}`} {
		_, _, err := cc.ContinuationMessages([]byte(bad), true)
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}
}

func TestChatTrimRawRight(t *testing.T) {
	for in, want := range map[string]string{
		`""`: `""`, `" "`: `""`, `"a"`: `"a"`, `"a\n\r\t\f"`: `"a"`, `"a\b"`: `"a\b"`,
		`"a\u0020\u3000"`: `"a"`, `"\u00e9 "`: `"\u00e9"`, `"a\\ "`: `"a\\"`, `"a\""`: `"a\""`,
		`"\ud83d\ude00 "`: `"\ud83d\ude00"`, "\"a\u2003\"": `"a"`, `"a\/ "`: `"a\/"`,
	} {
		require.Equal(t, want, chatTrimRawRight(in), in)
	}
}

func TestChatUserTextMessage(t *testing.T) {
	cc, _ := rewrite.Continuer(apitest.CodecFor(Descriptor))
	b, err := cc.UserTextMessage("Continue \"exactly\" where you stopped.\n")
	require.NoError(t, err)
	require.Equal(t, `{"role":"user","content":"Continue \"exactly\" where you stopped.\n"}`, string(b))
}

func TestChatContinueReply(t *testing.T) {
	cc, _ := rewrite.Continuer(apitest.CodecFor(Descriptor))
	const acc = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant",` +
		`"content":"The quick brown fox jumps over the","reasoning_content":"plan","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"length"}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"completion_tokens_details":{"reasoning_tokens":5}},"system_fingerprint":"fp"}`
	tests := []struct{ name, acc, next, want string }{
		{"seam, reasoning of next dropped, call kept, usage summed, stop from next", acc,
			`{"id":"c2","object":"chat.completion","created":2,"model":"m2","choices":[{"index":0,"message":{"role":"assistant","content":"jumps over the lazy dog.","reasoning_content":"more","refusal":null,` +
				`"tool_calls":[{"id":"call_x","type":"function","function":{"name":"read_file","arguments":"{}"}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":130,"completion_tokens":6,"total_tokens":136,"completion_tokens_details":{"reasoning_tokens":2}}}`,
			`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant",` +
				`"content":"The quick brown fox jumps over the lazy dog.","reasoning_content":"plan","refusal":null,"annotations":[],` +
				`"tool_calls":[{"id":"call_x","type":"function","function":{"name":"read_file","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":130,"completion_tokens":26,"total_tokens":156,"completion_tokens_details":{"reasoning_tokens":7}},"system_fingerprint":"fp"}`},
		{"nothing repeated: next's literal byte for byte",
			`{"choices":[{"index":0,"message":{"content":"Caf\u00e9 is"},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":" open \u00e0 8\n","reasoning":"r"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":"Caf\u00e9 is open \u00e0 8\n"},"finish_reason":"stop"}]}`},
		{"whitespace seam",
			`{"choices":[{"index":0,"message":{"content":"Hello "},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":" \n world"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":"Hello world"},"finish_reason":"stop"}]}`},
		{"whole continuation repeated",
			`{"choices":[{"index":0,"message":{"content":"it was the best of times"},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":"best of times"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":"it was the best of times"},"finish_reason":"stop"}]}`},
		{"acc without text: next's text as is",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"plan"},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":" Hi","reasoning_content":"more"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":" Hi","reasoning_content":"plan"},"finish_reason":"stop"}]}`},
		{"acc without content member, next without text",
			`{"choices":[{"index":0,"message":{"role":"assistant"},"finish_reason":"length"}],"usage":{"completion_tokens":1}}`,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"content_filter"}],"usage":{"completion_tokens":2}}`,
			`{"choices":[{"index":0,"message":{"role":"assistant","refusal":"No."},"finish_reason":"content_filter"}],"usage":{"completion_tokens":3}}`},
		{"parts: first text part merged, others follow",
			`{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"one two three four"}]},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"three four five"},{"type":"refusal","refusal":"x"}]},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"one two three four five"},{"type":"refusal","refusal":"x"}]},"finish_reason":"stop"}]}`},
		{"string continued by parts",
			`{"choices":[{"index":0,"message":{"content":"one two three four"},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"three four five"}]},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":"one two three four five"},"finish_reason":"stop"}]}`},
		{"acc ends with a non-text part: new part",
			`{"choices":[{"index":0,"message":{"content":[{"type":"refusal","refusal":"x"}]},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":"x y"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":[{"type":"refusal","refusal":"x"},{"type":"text","text":"x y"}]},"finish_reason":"stop"}]}`},
		{"acc's calls kept, next's appended, function_call taken",
			`{"choices":[{"index":0,"message":{"content":"a","tool_calls":[{"id":"1"}]},"finish_reason":"length"}]}`,
			`{"choices":[{"index":0,"message":{"content":"b","tool_calls":[{"id":"2"}],"function_call":{"name":"f"}},"finish_reason":"tool_calls"}]}`,
			`{"choices":[{"index":0,"message":{"content":"ab","tool_calls":[{"id":"1"},{"id":"2"}],"function_call":{"name":"f"}},"finish_reason":"tool_calls"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, n := []byte(tt.acc), []byte(tt.next)
			got, err := cc.ContinueReply(a, n)
			require.NoError(t, err)
			require.Equal(t, tt.acc, string(a))
			require.Equal(t, tt.next, string(n))
			require.Equal(t, tt.want, string(got))
			require.True(t, gjson.ValidBytes(got))
		})
	}
	for _, bad := range [][2]string{
		{`{`, `{"choices":[{"message":{}}]}`},
		{`{"choices":[{"message":{}}]}`, `[]`},
		{`{"choices":[]}`, `{"choices":[{"message":{}}]}`},
		{`{"choices":[{"message":{"content":1}}]}`, `{"choices":[{"message":{"content":"x"}}]}`},
		{`{"choices":[{"message":{"content":"x"}}]}`, `{"choices":[{"message":{"content":1}}]}`},
		{`{"choices":[{"message":{}}]}`, `{"choices":[{"message":{"tool_calls":{}}}]}`},
		{`{"choices":[{"message":{"tool_calls":{}}}]}`, `{"choices":[{"message":{"tool_calls":[{}]}}]}`},
	} {
		_, err := cc.ContinueReply([]byte(bad[0]), []byte(bad[1]))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}
}

// chatMock serves scripted mock replies (bench/mock) as Chat streams, the
// text split into deltas of 8 characters.
type chatMock struct {
	t   *testing.T
	srv *mock.Server
}

func newChatMock(t *testing.T) *chatMock {
	t.Helper()
	srv := mock.New(mock.Options{ChunkSize: 8})
	require.NoError(t, srv.Start())
	t.Cleanup(srv.Close)
	return &chatMock{t: t, srv: srv}
}

// body returns the mock's answer to one Chat request for r (a stream with
// include_usage, or the JSON reply).
func (m *chatMock) body(r mock.Reply, stream bool) string {
	m.t.Helper()
	m.srv.Script(r)
	req := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	if stream {
		req = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	}
	resp, err := http.Post(m.srv.URL()+"/v1/chat/completions", "application/json", strings.NewReader(req))
	require.NoError(m.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(m.t, err)
	require.Equal(m.t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// chatChunk renders a mock stream chunk of id with choice 0 delta and
// finish_reason (raw JSON).
func chatChunk(id, delta, finish string) string {
	return `{"id":"` + id + `","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":` +
		delta + `,"logprobs":null,"finish_reason":` + finish + `}],"usage":null}`
}

// chatUsageChunk renders the mock's usage chunk.
func chatUsageChunk(id string, prompt, completion int) string {
	return `{"id":"` + id + `","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":` +
		strconv.Itoa(prompt) + `,"completion_tokens":` + strconv.Itoa(completion) + `,"total_tokens":` + strconv.Itoa(prompt+completion) +
		`,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`
}

// chatTerminals counts the finish chunks, usage chunks and [DONE] events of
// an agent stream.
func chatTerminals(t *testing.T, out []byte) (finish, usage, done int) {
	t.Helper()
	for _, d := range chatSSEData(t, out) {
		if d == "[DONE]" {
			done++
			continue
		}
		if fr := gjson.Get(d, "choices.0.finish_reason"); fr.Type == gjson.String {
			finish++
		}
		if gjson.Get(d, "usage").IsObject() {
			usage++
		}
	}
	return
}

// chatNoEmptyDeltas checks that no event of out is a choice-0 chunk without
// anything in its delta but for a finish chunk, and that no reasoning reached
// the agent.
func chatNoEmptyDeltas(t *testing.T, out []byte, fromEvent int) {
	t.Helper()
	for i, d := range chatSSEData(t, out) {
		if i < fromEvent || d == "[DONE]" {
			continue
		}
		c := gjson.Get(d, "choices.0")
		if !c.Exists() {
			continue
		}
		delta := c.Get("delta")
		require.False(t, delta.Get("reasoning_content").Exists(), d)
		if c.Get("finish_reason").Type == gjson.String {
			continue
		}
		require.NotEqual(t, "", delta.Get("content").String()+delta.Get("refusal").String()+delta.Get("tool_calls").Raw, d)
	}
}

// A stream cut by the output limit, then a continuation repeating its last
// words: one reply, the seam de-duplicated, one terminal sequence with the
// continuation's stop and the usage summed.
func TestChatSpliceContinue(t *testing.T) {
	m := newChatMock(t)
	partial := "The quick brown fox jumps over the"
	cont := "jumps over the lazy dog."
	s1 := m.body(mock.Reply{ID: "chatcmpl-a", Text: partial, Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 20}}, true)
	s2 := m.body(mock.Reply{ID: "chatcmpl-b", Text: cont, Usage: mock.Usage{Input: 130, Output: 6}}, true)

	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, s1)
	// The partial text passes through byte for byte; the terminal events are held.
	require.True(t, strings.HasPrefix(s1, string(out)))
	require.Equal(t, 6, strings.Count(string(out), "data: "))
	reply1, err := s.Reply()
	require.NoError(t, err)
	rel, err := s.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	s.(rewrite.ContinueSplicer).Continue()

	// Until its finish chunk the continuation's text is held by the seam filter.
	r := rewrite.NewReader(strings.NewReader(s2))
	var out2 []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := s.Feed(&ev)
		require.NoError(t, err)
		if gjson.GetBytes(ev.Data, "choices.0.finish_reason").Type != gjson.String {
			require.Empty(t, b, "%s", ev.Data)
		}
		out2 = append(out2, b...)
	}
	require.True(t, s.Done())
	reply2, err := s.Reply()
	require.NoError(t, err)
	// The continuation's own reply, not the merged one.
	require.Equal(t, `{"id":"chatcmpl-b","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"jumps over the lazy dog.","refusal":null},"finish_reason":"stop"}],"usage":`+
		gjson.Get(chatUsageChunk("x", 130, 6), "usage").Raw+`}`, string(reply2))
	rel, err = s.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	fin, err := s.Finish()
	require.NoError(t, err)
	all := append(append(append([]byte(nil), out...), out2...), fin...)

	require.Equal(t, []string{
		chatChunk("chatcmpl-a", `{"role":"assistant","content":"","refusal":null}`, "null"),
		chatChunk("chatcmpl-a", `{"content":"The quic"}`, "null"),
		chatChunk("chatcmpl-a", `{"content":"k brown "}`, "null"),
		chatChunk("chatcmpl-a", `{"content":"fox jump"}`, "null"),
		chatChunk("chatcmpl-a", `{"content":"s over t"}`, "null"),
		chatChunk("chatcmpl-a", `{"content":"he"}`, "null"),
		// The continuation's finish chunk carries the de-duplicated text.
		chatChunk("chatcmpl-a", `{"content":" lazy dog."}`, "null"),
		chatChunk("chatcmpl-a", `{}`, `"stop"`),
		chatUsageChunk("chatcmpl-a", 130, 26),
		"[DONE]",
	}, chatSSEData(t, all))
	require.Equal(t, 10, s.Events())

	cc := chatAccumulate(t, all)
	require.Equal(t, "chatcmpl-a", cc.ID)
	require.Equal(t, partial+rewrite.TrimSeam(partial, cont), cc.Choices[0].Message.Content)
	require.Equal(t, "The quick brown fox jumps over the lazy dog.", cc.Choices[0].Message.Content)
	require.Equal(t, "stop", cc.Choices[0].FinishReason)
	require.EqualValues(t, 130, cc.Usage.PromptTokens)
	require.EqualValues(t, 26, cc.Usage.CompletionTokens)
	require.EqualValues(t, 156, cc.Usage.TotalTokens)
	f, u, d := chatTerminals(t, all)
	require.Equal(t, [3]int{1, 1, 1}, [3]int{f, u, d})

	// The same as the non-streaming path, from the streams' replies and from
	// the mock's JSON replies.
	codec, _ := rewrite.Continuer(apitest.CodecFor(Descriptor))
	for _, pair := range [][2]string{
		{string(reply1), string(reply2)},
		{m.body(mock.Reply{ID: "chatcmpl-a", Text: partial, Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 20}}, false),
			m.body(mock.Reply{ID: "chatcmpl-b", Text: cont, Usage: mock.Usage{Input: 130, Output: 6}}, false)},
	} {
		merged, err := codec.ContinueReply([]byte(pair[0]), []byte(pair[1]))
		require.NoError(t, err)
		want, err := apitest.CodecFor(Descriptor).ParseReply(merged)
		require.NoError(t, err)
		require.Equal(t, want.Text, cc.Choices[0].Message.Content)
		require.Equal(t, want.RawStop, cc.Choices[0].FinishReason)
		require.Equal(t, want.Usage.OutputTokens, cc.Usage.CompletionTokens)
		require.Equal(t, want.Usage.InputTokens, cc.Usage.PromptTokens)
	}

	// The continuation request's history item for the truncated reply.
	items, hasText, err := codec.ContinuationMessages(reply1, true)
	require.NoError(t, err)
	require.True(t, hasText)
	require.Equal(t, []string{`{"role":"assistant","content":"The quick brown fox jumps over the"}`}, apitest.Strings(items))
}

// Two continuations in a row, each long enough for the seam to be decided
// mid-stream (its later deltas then pass through as they arrive), the
// second after a partial ending in whitespace, in CRLF framing.
func TestChatSpliceContinueTwice(t *testing.T) {
	m := newChatMock(t)
	long := strings.Repeat("lorem ipsum dolor sit amet ", 12) // 324 bytes
	p1 := "Once upon a time there was a"
	c1 := "there was a " + long + "and then "
	c2 := " it ended." // after "and then ": only the whitespace repeats
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	s1 := crlf(m.body(mock.Reply{ID: "chatcmpl-1", Text: p1, Stop: "max_tokens", Usage: mock.Usage{Input: 10, Output: 7}}, true))
	s2 := crlf(m.body(mock.Reply{ID: "chatcmpl-2", Text: c1, Stop: "max_tokens", Usage: mock.Usage{Input: 20, Output: 80}}, true))
	s3 := crlf(m.body(mock.Reply{ID: "chatcmpl-3", Text: c2, Usage: mock.Usage{Input: 100, Output: 5}}, true))

	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, s1)
	_, err := s.Release(nil, nil)
	require.NoError(t, err)
	s.(rewrite.ContinueSplicer).Continue()

	// The seam is decided once 256 bytes of the continuation arrived: the
	// chunk that completes them carries the trimmed text so far, later
	// chunks pass through with the first stream's id.
	r := rewrite.NewReader(strings.NewReader(s2))
	var out2 []byte
	var emitted []string
	held := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := s.Feed(&ev)
		require.NoError(t, err)
		out2 = append(out2, b...)
		c := gjson.GetBytes(ev.Data, "choices.0.delta.content").Str
		if len(b) == 0 {
			held += len(c)
			continue
		}
		for _, d := range chatSSEData(t, b) {
			emitted = append(emitted, gjson.Get(d, "choices.0.delta.content").Str)
		}
		if len(emitted) == 1 {
			require.Less(t, held, rewrite.SeamWindow)
			require.GreaterOrEqual(t, held+len(c), rewrite.SeamWindow)
			require.Equal(t, rewrite.TrimSeam(p1, c1[:held+len(c)]), emitted[0])
		} else if c != "" {
			require.Equal(t, crlf("data: "+strings.Replace(string(ev.Data), "chatcmpl-2", "chatcmpl-1", 1)+"\n\n"), string(b))
		}
	}
	require.Equal(t, rewrite.TrimSeam(p1, c1), strings.Join(emitted, ""))
	require.Greater(t, len(emitted), 5) // decided mid-stream, then passed through
	_, err = s.Release(nil, nil)
	require.NoError(t, err)
	s.(rewrite.ContinueSplicer).Continue()
	out3 := chatMustSpliceFeed(t, s, s3)
	_, err = s.Release(nil, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	all := append(append(append(out, out2...), out3...), fin...)
	require.NotContains(t, strings.ReplaceAll(string(all), "\r\n", ""), "\n") // CRLF kept

	cc := chatAccumulate(t, all)
	text1 := p1 + rewrite.TrimSeam(p1, c1)
	require.Equal(t, text1+rewrite.TrimSeam(text1, c2), cc.Choices[0].Message.Content)
	require.Equal(t, "Once upon a time there was a "+long+"and then it ended.", cc.Choices[0].Message.Content)
	require.Equal(t, "chatcmpl-1", cc.ID)
	require.Equal(t, "stop", cc.Choices[0].FinishReason)
	require.EqualValues(t, 100, cc.Usage.PromptTokens)
	require.EqualValues(t, 92, cc.Usage.CompletionTokens)
	f, u, d := chatTerminals(t, all)
	require.Equal(t, [3]int{1, 1, 1}, [3]int{f, u, d})
	chatNoEmptyDeltas(t, all, 1)
	for _, d := range chatSSEData(t, all) {
		if d != "[DONE]" {
			require.Contains(t, d, `"id":"chatcmpl-1"`)
		}
	}
}

// A continuation with reasoning (dropped) and a tool call after its text
// (held, released by Release and numbered on).
func TestChatSpliceContinueThinkingAndCall(t *testing.T) {
	m := newChatMock(t)
	partial := "I will read the file"
	s1 := m.body(mock.Reply{ID: "chatcmpl-a", Text: partial, Thinking: &mock.Thinking{Text: "Plan first."}, Stop: "max_tokens",
		Usage: mock.Usage{Input: 50, Output: 30}}, true)
	s2 := m.body(mock.Reply{ID: "chatcmpl-b", Text: "read the file now.", Thinking: &mock.Thinking{Text: "Think again."},
		ToolCalls: []mock.ToolCall{{ID: "call_x", Name: "read_file", Args: `{"path":"main.go"}`}},
		Usage:     mock.Usage{Input: 90, Output: 12}}, true)

	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, s1)
	require.Contains(t, string(out), `"reasoning_content":"Plan fir"`) // the first stream's reasoning passes
	_, err := s.Release(nil, nil)
	require.NoError(t, err)
	s.(rewrite.ContinueSplicer).Continue()
	out2 := chatMustSpliceFeed(t, s, s2)
	reply2, err := s.Reply()
	require.NoError(t, err)
	require.Equal(t, "read the file now.", gjson.GetBytes(reply2, "choices.0.message.content").Str)
	require.Equal(t, "Think again.", gjson.GetBytes(reply2, "choices.0.message.reasoning_content").Str)
	// The text is flushed in a copy of the first tool-call chunk.
	require.Equal(t, []string{chatChunk("chatcmpl-a", `{"content":" now."}`, "null")}, chatSSEData(t, out2))
	rel, err := s.Release(nil, nil)
	require.NoError(t, err)
	require.Equal(t, []string{`{"id":"chatcmpl-a","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"main.go\"}"}}]},"finish_reason":null}],"usage":null}`},
		chatSSEData(t, rel))
	fin, err := s.Finish()
	require.NoError(t, err)
	all := append(append(append(out, out2...), rel...), fin...)
	chatNoEmptyDeltas(t, all, 3) // past the first stream's preamble and reasoning
	require.NotContains(t, string(all), "Think")

	require.Equal(t, []int{0}, chatToolIndices(t, all))
	cc := chatAccumulate(t, all)
	msg := cc.Choices[0].Message
	require.Equal(t, "I will read the file now.", msg.Content)
	require.Len(t, msg.ToolCalls, 1)
	require.Equal(t, "call_x", msg.ToolCalls[0].ID)
	require.Equal(t, "tool_calls", cc.Choices[0].FinishReason)
	require.EqualValues(t, 42, cc.Usage.CompletionTokens)
	f, u, d := chatTerminals(t, all)
	require.Equal(t, [3]int{1, 1, 1}, [3]int{f, u, d})
}

// A truncated stream whose last block is a cut tool call: the engine removes
// the call, and the continuation's text runs on in the text before it.
func TestChatSpliceContinueAfterCall(t *testing.T) {
	m := newChatMock(t)
	s1 := m.body(mock.Reply{ID: "chatcmpl-a", Text: "Let me look. ", Stop: "max_tokens",
		ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"ma`}},
		Usage:     mock.Usage{Input: 10, Output: 9}}, true)
	s2 := m.body(mock.Reply{ID: "chatcmpl-b", Text: " I will read main.go first.", Usage: mock.Usage{Input: 20, Output: 8}}, true)

	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, s1)
	reply1, err := s.Reply()
	require.NoError(t, err)
	codec, _ := rewrite.Continuer(apitest.CodecFor(Descriptor))
	items, hasText, err := codec.ContinuationMessages(reply1, true)
	require.NoError(t, err)
	require.True(t, hasText)
	require.Equal(t, []string{`{"role":"assistant","content":"Let me look."}`}, apitest.Strings(items))
	rel, err := s.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	s.(rewrite.ContinueSplicer).Continue()
	out2 := chatMustSpliceFeed(t, s, s2)
	require.Equal(t, []string{chatChunk("chatcmpl-a", `{"content":"I will read main.go first."}`, "null")}, chatSSEData(t, out2))
	_, err = s.Release(nil, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	all := append(append(out, out2...), fin...)

	cc := chatAccumulate(t, all)
	require.Equal(t, "Let me look. I will read main.go first.", cc.Choices[0].Message.Content)
	require.Empty(t, cc.Choices[0].Message.ToolCalls)
	require.Empty(t, chatToolIndices(t, all))
	require.Equal(t, "stop", cc.Choices[0].FinishReason)
	require.EqualValues(t, 17, cc.Usage.CompletionTokens)

	// No text at all before the cut call: the continuation's text opens the
	// content and passes through as it arrives.
	s1 = m.body(mock.Reply{ID: "chatcmpl-c", Stop: "max_tokens", ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "f", Args: `{"a`}}}, true)
	s = Descriptor.NewSplicer()
	out = chatMustSpliceFeed(t, s, s1)
	reply1, err = s.Reply()
	require.NoError(t, err)
	_, hasText, err = codec.ContinuationMessages(reply1, false)
	require.NoError(t, err)
	require.False(t, hasText)
	_, err = s.Release([]int{0}, nil)
	require.NoError(t, err)
	s.(rewrite.ContinueSplicer).Continue()
	out2 = chatMustSpliceFeed(t, s, m.body(mock.Reply{ID: "chatcmpl-d", Text: "Hello there, friend."}, true))
	require.Equal(t, []string{
		chatChunk("chatcmpl-c", `{"content":"Hello th"}`, "null"),
		chatChunk("chatcmpl-c", `{"content":"ere, fri"}`, "null"),
		chatChunk("chatcmpl-c", `{"content":"end."}`, "null"),
	}, chatSSEData(t, out2))
	_, err = s.Release(nil, nil)
	require.NoError(t, err)
	fin, err = s.Finish()
	require.NoError(t, err)
	cc = chatAccumulate(t, append(append(out, out2...), fin...))
	require.Equal(t, "Hello there, friend.", cc.Choices[0].Message.Content)
	require.Equal(t, "stop", cc.Choices[0].FinishReason)
}

// A continuation that only repeats the partial text emits no content event.
func TestChatSpliceContinueAllRepeated(t *testing.T) {
	m := newChatMock(t)
	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, m.body(mock.Reply{ID: "chatcmpl-a", Text: "it was the best of times", Stop: "max_tokens"}, true))
	_, err := s.Release(nil, nil)
	require.NoError(t, err)
	s.(rewrite.ContinueSplicer).Continue()
	out2 := chatMustSpliceFeed(t, s, m.body(mock.Reply{ID: "chatcmpl-b", Text: "the best of times"}, true))
	require.Empty(t, out2)
	_, err = s.Release(nil, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	// The finish chunk is the continuation's bytes but for the id.
	require.Equal(t, chatChunk("chatcmpl-a", `{}`, `"stop"`), chatSSEData(t, fin)[0])
	all := append(out, fin...)
	chatNoEmptyDeltas(t, all, 1)
	require.Equal(t, "it was the best of times", chatAccumulate(t, all).Choices[0].Message.Content)
}

// The held text is flushed as a built chunk where no chunk of the
// continuation ends it: at [DONE], at a usage or error chunk, at Release of
// a cut stream, and ahead of the next bytes after Next.
func TestChatSpliceContinueFlush(t *testing.T) {
	const first = "data: {\"id\":\"a\",\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"We saw that it was\"}}]}\n\n" +
		"data: {\"id\":\"a\",\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n" +
		"data: [DONE]\n\n"
	const flushed = `{"id":"a","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":" cut."},"finish_reason":null}]}`
	contText := "data: {\"id\":\"b\",\"created\":6,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning\":\"r\",\"content\":\"that it was\"}}]}\n\n" +
		"data: {\"id\":\"b\",\"created\":6,\"choices\":[{\"index\":0,\"delta\":{\"content\":\" cut.\"}}]}\n\n"
	start := func(t *testing.T) rewrite.StreamSplicer {
		s := Descriptor.NewSplicer()
		chatMustSpliceFeed(t, s, first)
		_, err := s.Release(nil, nil)
		require.NoError(t, err)
		s.(rewrite.ContinueSplicer).Continue()
		out, err := chatSpliceFeed(s, contText)
		require.NoError(t, err)
		require.Empty(t, out)
		return s
	}
	for _, tt := range []struct{ name, end string }{
		{"DONE", "data: [DONE]\n\n"},
		{"usage", "data: {\"id\":\"b\",\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t)
			out, err := chatSpliceFeed(s, tt.end)
			require.NoError(t, err)
			require.Equal(t, []string{flushed}, chatSSEData(t, out))
		})
	}
	t.Run("error", func(t *testing.T) {
		s := start(t)
		const errChunk = "data: {\"error\":{\"message\":\"boom\"}}\n\n"
		out, err := chatSpliceFeed(s, errChunk)
		require.NoError(t, err)
		require.Equal(t, "data: "+flushed+"\n\n"+errChunk, string(out))
	})
	t.Run("Release", func(t *testing.T) {
		s := start(t)
		// A tool-call chunk ends the text: it comes out in a copy of it.
		out, err := chatSpliceFeed(s, "data: {\"id\":\"b\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\"}}]}}]}\n\n")
		require.NoError(t, err)
		require.Equal(t, []string{`{"id":"a","choices":[{"index":0,"delta":{"content":" cut."}}]}`}, chatSSEData(t, out))
		rel, err := s.Release(nil, nil)
		require.NoError(t, err)
		require.Equal(t, []string{`{"id":"a","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`},
			chatSSEData(t, rel))
		// A stream cut before: Release writes the held text first.
		s = start(t)
		rel, err = s.Release(nil, nil)
		require.NoError(t, err)
		require.Equal(t, []string{flushed}, chatSSEData(t, rel))
		// The cut continuation held no terminal events.
		fin, err := s.Finish()
		require.NoError(t, err)
		require.Empty(t, fin)
	})
	t.Run("Next", func(t *testing.T) {
		s := start(t)
		s.Next()
		out, err := chatSpliceFeed(s, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" More.\"}}]}\n\n")
		require.NoError(t, err)
		require.Equal(t, []string{flushed, `{"id":"a","choices":[{"index":0,"delta":{"content":" More."}}]}`}, chatSSEData(t, out))
	})
	t.Run("Finish", func(t *testing.T) {
		s := start(t)
		fin, err := s.Finish()
		require.NoError(t, err)
		require.Equal(t, []string{flushed}, chatSSEData(t, fin))
	})
	t.Run("finish chunk without delta", func(t *testing.T) {
		s := start(t)
		out, err := chatSpliceFeed(s, "data: {\"id\":\"b\",\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		require.NoError(t, err)
		require.Equal(t, []string{flushed}, chatSSEData(t, out))
		fin, err := s.Finish()
		require.NoError(t, err)
		require.Equal(t, []string{`{"id":"a","choices":[{"index":0,"finish_reason":"stop","delta":{}}]}`, "[DONE]"}, chatSSEData(t, fin))
	})
	t.Run("refusal kept, reasoning and role dropped", func(t *testing.T) {
		s := Descriptor.NewSplicer()
		chatMustSpliceFeed(t, s, first)
		_, err := s.Release(nil, nil)
		require.NoError(t, err)
		s.(rewrite.ContinueSplicer).Continue()
		out, err := chatSpliceFeed(s, "data: {\"id\":\"b\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"that it was\",\"reasoning_content\":\"x\",\"refusal\":\"No.\"}}]}\n\n")
		require.NoError(t, err)
		require.Equal(t, []string{`{"id":"a","choices":[{"index":0,"delta":{"content":"","refusal":"No."}}]}`}, chatSSEData(t, out))
	})
}

// A stream that is not continued keeps today's bytes, reasoning included.
func TestChatSpliceNoContinuationUnchanged(t *testing.T) {
	m := newChatMock(t)
	in := m.body(mock.Reply{ID: "chatcmpl-a", Text: "Plain answer, not cut.", Thinking: &mock.Thinking{Text: "hmm"}}, true)
	s := Descriptor.NewSplicer()
	out := chatMustSpliceFeed(t, s, in)
	rel, err := s.Release(nil, nil)
	require.NoError(t, err)
	fin, err := s.Finish()
	require.NoError(t, err)
	require.Equal(t, in, string(append(append(out, rel...), fin...)))
}
