package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func gsFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "gemini", name))
	require.NoError(t, err)
	return string(b)
}

// gsFeed feeds an SSE text to sp one byte at a time and returns what sp
// emitted.
func gsFeed(t testing.TB, sp rewrite.StreamSplicer, sse string) []byte {
	t.Helper()
	out, err := gsFeedErr(sp, sse)
	require.NoError(t, err)
	return out
}

func gsFeedErr(sp rewrite.StreamSplicer, sse string) ([]byte, error) {
	r := rewrite.NewReader(iotest.OneByteReader(strings.NewReader(sse)))
	var out []byte
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b, err := sp.Feed(&ev)
		if err != nil {
			return out, err
		}
		out = append(out, b...)
	}
}

// gsEvents splits an emitted stream into the data of its events.
func gsEvents(t testing.TB, out []byte) [][]byte {
	t.Helper()
	r := rewrite.NewReader(bytes.NewReader(out))
	var data [][]byte
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return data
		}
		require.NoError(t, err)
		if ev.HasData() {
			data = append(data, bytes.Clone(ev.Data))
		}
	}
}

// gsAgent is what a client makes of a stream.
type gsAgent struct {
	text, thought string
	calls         []*genai.Part
	finish        genai.FinishReason
	usage         *genai.GenerateContentResponseUsageMetadata
	ids           map[string]bool
	models        map[string]bool
	chunks        []*genai.GenerateContentResponse
}

// gsParse decodes every event of out with the genai SDK's types.
func gsParse(t testing.TB, out []byte) *gsAgent {
	t.Helper()
	a := &gsAgent{ids: map[string]bool{}, models: map[string]bool{}}
	for _, d := range gsEvents(t, out) {
		var c genai.GenerateContentResponse
		require.NoError(t, json.Unmarshal(d, &c), "chunk %s", d)
		a.chunks = append(a.chunks, &c)
		a.ids[c.ResponseID] = true
		a.models[c.ModelVersion] = true
		if c.UsageMetadata != nil {
			a.usage = c.UsageMetadata
		}
		if len(c.Candidates) == 0 {
			continue
		}
		cand := c.Candidates[0]
		if cand.FinishReason != "" {
			a.finish = cand.FinishReason
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				a.calls = append(a.calls, p)
			case p.Thought:
				a.thought += p.Text
			default:
				a.text += p.Text
			}
		}
	}
	return a
}

func TestGeminiSplicerRegistered(t *testing.T) {
	require.True(t, (Descriptor.NewSplicer != nil))
	require.IsType(t, &geminiSplicer{}, Descriptor.NewSplicer())
}

// An untouched turn reaches the agent byte for byte.
func TestGeminiSplicerPassThrough(t *testing.T) {
	for _, name := range []string{"splice_text.sse", "stream.sse", "splice_calls.sse"} {
		t.Run(name, func(t *testing.T) {
			in := gsFixture(t, name)
			sp := Descriptor.NewSplicer()
			out := gsFeed(t, sp, in)
			require.True(t, sp.Done())
			rel, err := sp.Release(nil, nil)
			require.NoError(t, err)
			require.Empty(t, rel)
			fin, err := sp.Finish()
			require.NoError(t, err)
			out = append(out, rel...)
			out = append(out, fin...)
			require.Equal(t, in, string(out))
			require.Equal(t, len(gsEvents(t, []byte(in))), sp.Events())
			fin, err = sp.Finish()
			require.NoError(t, err)
			require.Empty(t, fin)
		})
	}
}

func TestGeminiSplicerTextStreamsAtOnce(t *testing.T) {
	in := gsFixture(t, "splice_text.sse")
	events := gsEvents(t, []byte(in))
	sp := Descriptor.NewSplicer()
	r := rewrite.NewReader(strings.NewReader(in))
	for i := range events {
		ev, err := r.Next()
		require.NoError(t, err)
		b, err := sp.Feed(&ev)
		require.NoError(t, err)
		if i < len(events)-1 {
			require.Equal(t, string(ev.Raw), string(b), "chunk %d passes at once", i)
		} else {
			require.Empty(t, b, "the terminal chunk is held")
		}
	}
	a := gsParse(t, []byte(in))
	require.Equal(t, "Hello, world é\n!", a.text)
	require.Equal(t, genai.FinishReasonStop, a.finish)
}

func TestGeminiSplicerRemoveFirstCall(t *testing.T) {
	for _, name := range []string{"splice_calls.sse", "splice_mixed.sse"} {
		t.Run(name, func(t *testing.T) {
			in := gsFixture(t, name)
			sp := Descriptor.NewSplicer()
			out := gsFeed(t, sp, in)
			require.True(t, sp.Done())
			// No call reached the agent yet.
			require.Empty(t, gsParse(t, out).calls)
			reply, err := sp.Reply()
			require.NoError(t, err)
			view, err := apitest.CodecFor(Descriptor).ParseReply(reply)
			require.NoError(t, err)
			require.Len(t, view.ToolCalls, 2)
			require.Equal(t, "create_new_topic", view.ToolCalls[0].Name)

			rel, err := sp.Release([]int{0}, nil)
			require.NoError(t, err)
			fin, err := sp.Finish()
			require.NoError(t, err)
			out = append(append(out, rel...), fin...)

			a := gsParse(t, out)
			require.True(t, strings.HasPrefix(a.text, "Checking"), a.text)
			require.Len(t, a.calls, 1)
			require.Equal(t, "read_file", a.calls[0].FunctionCall.Name)
			require.Equal(t, []byte("BBBB"), a.calls[0].ThoughtSignature)
			require.Equal(t, genai.FinishReasonStop, a.finish)
			require.NotNil(t, a.usage)
			require.EqualValues(t, 80, a.usage.PromptTokenCount)
			require.EqualValues(t, 20, a.usage.CandidatesTokenCount)
			require.Equal(t, map[string]bool{reqGeminiID(t, in): true}, a.ids)

			// The agent's stream says what EditReply says of the reply.
			edited, err := gemTC.EditReply(reply, []int{0}, nil)
			require.NoError(t, err)
			want, err := apitest.CodecFor(Descriptor).ParseReply(edited)
			require.NoError(t, err)
			require.Equal(t, want.Text, a.text)
			require.Equal(t, want.Usage.OutputTokens, int64(a.usage.CandidatesTokenCount+a.usage.ThoughtsTokenCount))
		})
	}
}

func reqGeminiID(t testing.TB, sse string) string {
	t.Helper()
	var c genai.GenerateContentResponse
	require.NoError(t, json.Unmarshal(gsEvents(t, []byte(sse))[0], &c))
	return c.ResponseID
}

func TestGeminiSplicerMixedTextForwardedAtOnce(t *testing.T) {
	in := gsFixture(t, "splice_mixed.sse")
	sp := Descriptor.NewSplicer()
	r := rewrite.NewReader(strings.NewReader(in))
	ev, err := r.Next()
	require.NoError(t, err)
	b, err := sp.Feed(&ev)
	require.NoError(t, err)
	// Only the parts array changed: thought (signed) and text, no call.
	want := strings.Replace(string(ev.Data), `,{"functionCall": {"name": "create_new_topic","args": {"title": "x"}}}`, "", 1)
	require.Equal(t, "data: "+want+"\r\n\r\n", string(b))
}

func TestGeminiSplicerMoveFirst(t *testing.T) {
	in := gsFixture(t, "splice_calls.sse")
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, in)
	rel, err := sp.Release(nil, []int{1})
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	a := gsParse(t, append(append(out, rel...), fin...))
	require.Len(t, a.calls, 2)
	require.Equal(t, "read_file", a.calls[0].FunctionCall.Name)
	require.Equal(t, "b1", a.calls[0].FunctionCall.ID)
	require.Equal(t, []byte("AAAA"), a.calls[1].ThoughtSignature)
	require.Equal(t, genai.FinishReasonStop, a.finish)
	// The last chunk carries only an empty text part, which the SDK's Chat
	// counts as an empty content.
	last := a.chunks[len(a.chunks)-1]
	require.Len(t, last.Candidates[0].Content.Parts, 1)
	require.Equal(t, "", last.Candidates[0].Content.Parts[0].Text)

	_, err = Descriptor.NewSplicer().Release([]int{0}, nil)
	require.Error(t, err, "no calls to remove")
}

func TestGeminiSplicerFollowUp(t *testing.T) {
	in1, in2 := gsFixture(t, "splice_follow1.sse"), gsFixture(t, "splice_follow2.sse")
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, in1)
	require.Empty(t, out)
	require.True(t, sp.Done())
	reply1, err := sp.Reply()
	require.NoError(t, err)
	rel, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	sp.Next()
	require.False(t, sp.Done())
	out = append(out, gsFeed(t, sp, in2)...)
	require.True(t, sp.Done())
	reply2, err := sp.Reply()
	require.NoError(t, err)
	rel, err = sp.Release(nil, nil)
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	out = append(append(out, rel...), fin...)

	a := gsParse(t, out)
	require.Equal(t, "Topic set.", a.thought)
	require.Equal(t, "Now refactoring the code.", a.text)
	require.Empty(t, a.calls)
	require.Equal(t, genai.FinishReasonStop, a.finish)
	require.Equal(t, map[string]bool{"rf1": true}, a.ids)
	require.EqualValues(t, 130, a.usage.PromptTokenCount)
	require.EqualValues(t, 15+7, a.usage.CandidatesTokenCount)
	require.EqualValues(t, 40+9, a.usage.ThoughtsTokenCount)
	require.EqualValues(t, 130+22+49, a.usage.TotalTokenCount)

	// Same as the non-streaming engine: MergeReplies(EditReply(r1), r2).
	edited, err := gemTC.EditReply(reply1, []int{0}, nil)
	require.NoError(t, err)
	merged, err := gemTC.MergeReplies(edited, reply2)
	require.NoError(t, err)
	var m genai.GenerateContentResponse
	require.NoError(t, json.Unmarshal(merged, &m))
	require.Equal(t, m.UsageMetadata, a.usage)
	require.Equal(t, m.ResponseID, "rf1")
	require.Equal(t, m.Candidates[0].FinishReason, a.finish)
}

// A follow-up after a turn whose held terminal chunk keeps its calls (no-op
// Release) sends them before the follow-up's text.
func TestGeminiSplicerFollowUpKeepsCalls(t *testing.T) {
	in1, in2 := gsFixture(t, "splice_calls.sse"), gsFixture(t, "splice_follow2.sse")
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, in1)
	rel, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	sp.Next()
	out = append(out, gsFeed(t, sp, in2)...)
	fin, err := sp.Finish()
	require.NoError(t, err)
	out = append(out, fin...)
	a := gsParse(t, out)
	require.Len(t, a.calls, 2)
	require.Equal(t, "Checking both.Now refactoring the code.", a.text)
	require.Equal(t, map[string]bool{"rc1": true}, a.ids)
	require.EqualValues(t, 27, a.usage.CandidatesTokenCount)
	// The calls come before the follow-up's parts.
	evs := gsEvents(t, out)
	require.Contains(t, string(evs[1]), "functionCall")
	require.NotContains(t, string(evs[1]), "finishReason")
	require.NotContains(t, string(evs[1]), "usageMetadata")
}

func TestGeminiSplicerReply(t *testing.T) {
	sp := Descriptor.NewSplicer()
	gsFeed(t, sp, gsFixture(t, "stream.sse"))
	require.True(t, sp.Done())
	reply, err := sp.Reply()
	require.NoError(t, err)
	require.JSONEq(t, gsFixture(t, "splice_reply.json"), string(reply))

	got, err := apitest.CodecFor(Descriptor).ParseReply(reply)
	require.NoError(t, err)
	want, err := apitest.CodecFor(Descriptor).ParseReply([]byte(gsFixture(t, "reply.json")))
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, conv.StopToolUse, got.Stop)

	msgs, err := gemTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.JSONEq(t, `{"role":"model","parts":[
		{"text":"Need the file.","thought":true},{"text":"Reading"},{"text":" it."},
		{"functionCall":{"name":"read_file","args":{"path":"main.go"}},"thoughtSignature":"CiQB..."}]}`, string(msgs[0]))
	// Parts are the upstream's bytes.
	require.Contains(t, string(msgs[0]), `{"functionCall": {"name": "read_file","args": {"path": "main.go"}},"thoughtSignature": "CiQB..."}`)
}

func TestGeminiSplicerErrorChunk(t *testing.T) {
	errEv := `data: {"error": {"code": 503,"message": "overloaded","status": "UNAVAILABLE"}}` + "\r\n\r\n"
	in := strings.Join(strings.SplitAfter(gsFixture(t, "splice_text.sse"), "\r\n\r\n")[:2], "") + errEv
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, in)
	require.Equal(t, in, string(out))
	require.True(t, sp.Done())
	_, err := sp.Reply()
	require.Error(t, err)
	rel, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, rel)
	fin, err := sp.Finish()
	require.NoError(t, err)
	require.Empty(t, fin)

	// On a follow-up the held text of the first stream still goes first.
	sp = Descriptor.NewSplicer()
	gsFeed(t, sp, gsFixture(t, "splice_text.sse"))
	_, err = sp.Release(nil, nil)
	require.NoError(t, err)
	sp.Next()
	out = gsFeed(t, sp, errEv)
	evs := gsEvents(t, out)
	require.Len(t, evs, 2)
	require.Contains(t, string(evs[0]), `"!"`)
	require.NotContains(t, string(evs[0]), "finishReason")
	require.Contains(t, string(evs[1]), "overloaded")
	fin, err = sp.Finish()
	require.NoError(t, err)
	require.Empty(t, fin)
}

func TestGeminiSplicerMalformed(t *testing.T) {
	for _, data := range []string{
		`[DONE]`, `{"candidates":{}}`, `{"candidates":[1]}`, `{"candidates":[{"content":[]}]}`,
		`{"candidates":[{"content":{"parts":{}}}]}`, `{"candidates":[{"content":{"parts":["x"]}}]}`, `{`,
	} {
		sp := Descriptor.NewSplicer()
		_, err := sp.Feed(&rewrite.Event{Data: []byte(data), Raw: []byte("data: " + data + "\n\n")})
		require.Error(t, err, data)
	}
	sp := Descriptor.NewSplicer()
	b, err := sp.Feed(&rewrite.Event{Raw: []byte(": ping\n\n")})
	require.NoError(t, err)
	require.Equal(t, ": ping\n\n", string(b))
	_, err = sp.Finish()
	require.NoError(t, err)
	_, err = sp.Feed(&rewrite.Event{Raw: []byte(": ping\n\n")})
	require.Error(t, err)
}

// A terminal chunk with text and a call: the text goes at once, the call
// AtField Release, finishReason and usage at Finish.
func TestGeminiSplicerMixedTerminal(t *testing.T) {
	data := `{"candidates":[{"content":{"parts":[{"text":"ok"},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"U0lH"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7},"modelVersion":"m","responseId":"r"}`
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, "data: "+data+"\n\n")
	require.Equal(t, `data: {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"index":0}],"modelVersion":"m","responseId":"r"}`+"\n\n", string(out))
	require.True(t, sp.Done())
	rel, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Equal(t, `data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"U0lH"}]},"index":0}],"modelVersion":"m","responseId":"r"}`+"\n\n", string(rel))
	fin, err := sp.Finish()
	require.NoError(t, err)
	require.Equal(t, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7},"modelVersion":"m","responseId":"r"}`+"\n\n", string(fin))
	reply, err := sp.Reply()
	require.NoError(t, err)
	view, err := apitest.CodecFor(Descriptor).ParseReply(reply)
	require.NoError(t, err)
	require.Equal(t, "ok", view.Text)
	require.Len(t, view.ToolCalls, 1)
	require.Equal(t, 3, sp.Events())
}

// A blocked prompt (no candidate) is terminal and re-sent as it came.
func TestGeminiSplicerPromptBlocked(t *testing.T) {
	in := `data: {"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"m","responseId":"r"}` + "\r\n\r\n"
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, in)
	require.Empty(t, out)
	require.True(t, sp.Done())
	reply, err := sp.Reply()
	require.NoError(t, err)
	view, err := apitest.CodecFor(Descriptor).ParseReply(reply)
	require.NoError(t, err)
	require.Equal(t, conv.StopRefusal, view.Stop)
	rel, err := sp.Release(nil, nil)
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	require.Equal(t, in, string(rel)+string(fin))
}

// LF framing is kept for the events the splicer writes.
func TestGeminiSplicerLF(t *testing.T) {
	in := strings.ReplaceAll(gsFixture(t, "splice_calls.sse"), "\r\n", "\n")
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, in)
	rel, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	out = append(append(out, rel...), fin...)
	require.NotContains(t, string(out), "\r")
	require.Len(t, gsEvents(t, out), 3)
}

// The genai SDK's Chat takes a spliced stream as a valid turn: the final
// chunk with only {"text":""} does not void its history.
func TestGeminiSplicerGenaiChat(t *testing.T) {
	sp := Descriptor.NewSplicer()
	out := gsFeed(t, sp, gsFixture(t, "splice_calls.sse"))
	rel, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	out = append(append(out, rel...), fin...)
	require.Contains(t, string(fin), `{"text":""}`)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	ctx := context.Background()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, APIVersion: "v1beta"}})
	require.NoError(t, err)
	chat, err := c.Chats.Create(ctx, "gemini-2.5-flash", nil, nil)
	require.NoError(t, err)
	var calls []string
	for chunk, err := range chat.SendMessageStream(ctx, genai.Part{Text: "hi"}) {
		require.NoError(t, err)
		for _, fc := range chunk.FunctionCalls() {
			calls = append(calls, fc.Name)
		}
	}
	require.Equal(t, []string{"read_file"}, calls)
	h := chat.History(true)
	require.GreaterOrEqual(t, len(h), 2, "the turn is in the curated history")
	require.Equal(t, genai.RoleModel, h[len(h)-1].Role)
}

func FuzzGeminiSplicer(f *testing.F) {
	for _, n := range []string{"splice_text.sse", "splice_calls.sse", "splice_mixed.sse", "splice_follow1.sse", "stream.sse"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "gemini", n))
		require.NoError(f, err)
		f2, err := os.ReadFile(filepath.Join("..", "testdata", "gemini", "splice_follow2.sse"))
		require.NoError(f, err)
		f.Add(string(b), string(f2), []byte{0, 1, 0xff})
		f.Add(string(b), "", []byte{0x80, 0})
	}
	f.Add("data: {\"error\":{\"code\":1}}\n\n", ": x\r\n\r\ndata: {}", []byte{3})
	// Truncation recovery: ctl[0]&2 continues instead of following up.
	trunc := `data: {"candidates":[{"content":{"parts":[{"text":"Hello wor"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"responseId":"a"}` + "\n\n"
	cont := `data: {"candidates":[{"content":{"parts":[{"text":"x","thought":true},{"text":"lo world again"}],"role":"model"},"index":0}],"responseId":"b"}` + "\n\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"!"},{"functionCall":{"name":"f","args":{}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"candidatesTokenCount":2}}` + "\n\n"
	f.Add(trunc, cont, []byte{3})
	f.Add(trunc, cont, []byte{3, 1, 1})
	f.Add(trunc, cont[:len(cont)/2], []byte{7})
	f.Add(`data: {"candidates":[{"content":{"parts":[{"text":"a"},{"functionCall":{"name":"f","args":{}}}]},"finishReason":"MAX_TOKENS"}]}`+"\n\n", cont, []byte{3, 0})
	f.Fuzz(func(t *testing.T, s1, s2 string, ctl []byte) {
		sp := Descriptor.NewSplicer()
		var out []byte
		ok := true
		step := func(b []byte, err error) {
			if err != nil {
				ok = false
			}
			out = append(out, b...)
		}
		pick := func(k int) []int {
			var l []int
			for i, c := range ctl {
				if i%2 == k {
					l = append(l, int(c%5)-1)
				}
			}
			return l
		}
		step(gsFeedErr(sp, s1))
		if ok {
			_, _ = sp.Reply()
			step(sp.Release(pick(0), pick(1)))
		}
		if ok && len(ctl) > 0 && ctl[0]&1 == 1 {
			if ctl[0]&2 == 2 {
				sp.(rewrite.ContinueSplicer).Continue()
			} else {
				sp.Next()
			}
			step(gsFeedErr(sp, s2))
			if ok {
				_, _ = sp.Reply()
				step(sp.Release(pick(1), nil))
			}
		}
		if ok {
			step(sp.Finish())
		}
		if !ok {
			return
		}
		r := rewrite.NewReader(bytes.NewReader(out))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if ev.HasData() && !json.Valid(ev.Data) {
				t.Fatalf("invalid data %q in %q", ev.Data, out)
			}
		}
	})
}
