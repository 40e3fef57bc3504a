package rewrite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

var gemCC = func() ContinueCodec {
	cc, ok := Continuer(codecFor(Gemini))
	if !ok {
		panic("gemini has no ContinueCodec")
	}
	return cc
}()

// gcReply builds a non-streaming reply with the given parts.
func gcReply(finish, usage string, parts ...string) []byte {
	return []byte(`{"candidates":[{"content":{"parts":[` + strings.Join(parts, ",") + `],"role":"model"},"finishReason":"` +
		finish + `","index":0}],"usageMetadata":` + usage + `,"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)
}

const (
	gcThought = `{"text": "Plan it.","thought": true,"thoughtSignature": "VEhPVUdIVA=="}`
	gcCall    = `{"functionCall": {"name": "read_file","args": {"path": "ma`
	gcCallOK  = `{"functionCall":{"name":"read_file","args":{"path":"a.go"}},"thoughtSignature":"Q0FMTA=="}`
	gcUsage1  = `{"promptTokenCount": 100,"candidatesTokenCount": 50,"thoughtsTokenCount": 10,"totalTokenCount": 160}`
	gcUsage2  = `{"promptTokenCount":170,"candidatesTokenCount":20,"totalTokenCount":190}`
)

func TestGeminiContinuer(t *testing.T) {
	require.IsType(t, geminiCodec{views: testViews}, gemCC)
	_, ok := Gemini.NewSplicer().(ContinueSplicer)
	require.True(t, ok)
}

func TestGeminiContinuationMessages(t *testing.T) {
	cases := []struct {
		name    string
		parts   []string
		prefill bool
		want    string // "" when hasText is false
	}{
		{name: "calls dropped, thought byte for byte",
			parts: []string{gcThought, `{"text": "Reading é\n"}`, gcCallOK, `{"text":" more"}`, gcCallOK},
			want:  `{"role":"model","parts":[` + gcThought + `,{"text": "Reading é\n"},{"text":" more"}]}`},
		{name: "no calls: the parts as they are", parts: []string{gcThought, `{"text":"a  "}`},
			want: `{"role":"model","parts":[` + gcThought + `,{"text":"a  "}]}`},
		{name: "whitespace text counts without prefill", parts: []string{`{"text":"\n"}`},
			want: `{"role":"model","parts":[{"text":"\n"}]}`},
		{name: "prefill trims the last text", prefill: true,
			parts: []string{gcThought, `{"text":"Hello"}`, `{"text":" world \n\t","thoughtSignature":"U0k="}`, gcCallOK},
			want:  `{"role":"model","parts":[` + gcThought + `,{"text":"Hello"},{"text":" world","thoughtSignature":"U0k="}]}`},
		{name: "prefill drops whitespace parts at the end", prefill: true,
			parts: []string{`{"text":"Hello"}`, `{"text":" world"}`, `{"text":"\n\n"}`, `{"text":"   "}`},
			want:  `{"role":"model","parts":[{"text":"Hello"},{"text":" world"}]}`},
		{name: "prefill keeps escapes", prefill: true,
			parts: []string{`{"text":"caf\u00e9\u0020\u00a0\\n\r\n"}`},
			want:  `{"role":"model","parts":[{"text":"caf\u00e9\u0020\u00a0\\n"}]}`},
		{name: "prefill without change", prefill: true, parts: []string{`{"text":"done."}`},
			want: `{"role":"model","parts":[{"text":"done."}]}`},
		{name: "prefill: only whitespace text", prefill: true, parts: []string{gcThought, `{"text":" \n"}`}},
		{name: "only a truncated call", parts: []string{gcThought, `{"functionCall":{"name":"f","args":{}}}`}},
		{name: "only a truncated call, prefill", prefill: true, parts: []string{`{"functionCall":{"name":"f","args":{}}}`}},
		{name: "empty text", parts: []string{`{"text":""}`}},
		{name: "no parts", parts: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reply := gcReply("MAX_TOKENS", gcUsage1, c.parts...)
			orig := bytes.Clone(reply)
			items, hasText, err := gemCC.ContinuationMessages(reply, c.prefill)
			require.NoError(t, err)
			require.Equal(t, orig, reply, "input untouched")
			if c.want == "" {
				require.False(t, hasText)
				require.Nil(t, items)
				return
			}
			require.True(t, hasText)
			require.Len(t, items, 1)
			require.Equal(t, c.want, string(items[0]))
			again, _, _ := gemCC.ContinuationMessages(reply, c.prefill)
			require.Equal(t, items, again, "deterministic")
			if !c.prefill && !strings.Contains(strings.Join(c.parts, ""), "functionCall") {
				as, err := gemTC.ReplyAsMessages(reply)
				require.NoError(t, err)
				require.Equal(t, as, items)
			}
			// The item is a valid request content.
			body, err := gemTC.AppendMessages([]byte(gmBody(gmU0)), items)
			require.NoError(t, err)
			req, err := codecFor(Gemini).ParseRequest(body)
			require.NoError(t, err)
			require.Equal(t, conv.RoleAssistant, req.Messages[1].Role)
		})
	}
	for _, none := range []string{`{"candidates":[]}`, `{"candidates":[{"content":{"role":"model"},"finishReason":"MAX_TOKENS"}],` +
		`"usageMetadata":{"promptTokenCount":9,"totalTokenCount":1033,"thoughtsTokenCount":1024}}`} {
		items, hasText, err := gemCC.ContinuationMessages([]byte(none), false)
		require.NoError(t, err, none)
		require.False(t, hasText)
		require.Nil(t, items)
	}
	for _, bad := range []string{`{`, `[]`, `{"candidates":[{"content":{"parts":{}}}]}`} {
		_, _, err := gemCC.ContinuationMessages([]byte(bad), true)
		require.Error(t, err, bad)
	}
}

// geminiTrimRightRaw matches strings.TrimRightFunc(unicode.IsSpace) on the
// decoded text and keeps the rest of the literal byte for byte.
func TestGeminiTrimRightRaw(t *testing.T) {
	for raw, want := range map[string]string{
		`""`:                  `""`,
		`"  "`:                `""`,
		`"a\\n"`:              `"a\\n"`,
		`"a\\\n"`:             `"a\\"`,
		`"a\ud83d\ude00 \n"`:  `"a\ud83d\ude00"`,
		`"x\u2003\u3000\t\f"`: `"x"`,
		"\"é\u00a0\u2028 \"":  `"é"`,
		`"b\u000b\u0085"`:     `"b"`,
		`"\ud800 "`:           `"\ud800"`,
		`"\/ "`:               `"\/"`,
		`"q\" "`:              `"q\""`,
	} {
		require.Equal(t, want, geminiTrimRightRaw(raw), raw)
	}
	alphabet := []string{"a", " ", "\n", "\t", "é", "\u00a0", "\u2028", "\u3000", "\"", "\\", "😀", "\x0b", "\u0085", "<"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var sb strings.Builder
		for range r.IntN(8) {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := sb.String()
		want := strings.TrimRightFunc(s, unicode.IsSpace)
		for _, raw := range [][]byte{jsonkit.AppendString(nil, s), mustJSON(t, s)} {
			got := geminiTrimRightRaw(string(raw))
			require.True(t, strings.HasPrefix(string(raw), got[:len(got)-1]), "a prefix of %s", raw)
			require.Equal(t, want, gjson.Parse(got).Str, "%s", raw)
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v) // escapes <, >, & and U+2028 as \u....
	require.NoError(t, err)
	return b
}

func TestGeminiUserTextMessage(t *testing.T) {
	item, err := gemCC.UserTextMessage("Continue exactly where you stopped.\n\"go\"")
	require.NoError(t, err)
	require.Equal(t, `{"role":"user","parts":[{"text":"Continue exactly where you stopped.\n\"go\""}]}`, string(item))
	body, err := gemTC.AppendMessages([]byte(gmBody(gmU0)), [][]byte{item})
	require.NoError(t, err)
	req, err := codecFor(Gemini).ParseRequest(body)
	require.NoError(t, err)
	require.Equal(t, conv.RoleUser, req.Messages[1].Role)
	require.Equal(t, "Continue exactly where you stopped.\n\"go\"", req.Messages[1].Blocks[0].Text)
}

func TestGeminiContinueReply(t *testing.T) {
	accText := []string{gcThought, `{"text": "The quick brown fox"}`, `{"text": " jumps over"}`}
	cases := []struct {
		name      string
		acc, next []byte
		want      []byte
	}{
		{name: "seam de-duplicated, next's thought dropped",
			acc:  gcReply("MAX_TOKENS", gcUsage1, accText...),
			next: gcReply("STOP", gcUsage2, `{"text":"More thoughts","thought":true}`, `{"text":"fox jumps over"}`, `{"text":" the lazy dog."}`),
			want: gcReply("STOP", `{"promptTokenCount":170,"candidatesTokenCount":70,"totalTokenCount":250,"thoughtsTokenCount":10}`,
				gcThought, `{"text": "The quick brown fox"}`, `{"text": " jumps over the lazy dog."}`)},
		{name: "tool call in next kept after the text, later text too",
			acc:  gcReply("MAX_TOKENS", gcUsage1, accText...),
			next: gcReply("STOP", gcUsage2, `{"text":" the \"lazy\" dog"}`, gcCallOK, `{"text":"after"}`),
			want: gcReply("STOP", `{"promptTokenCount":170,"candidatesTokenCount":70,"totalTokenCount":250,"thoughtsTokenCount":10}`,
				gcThought, `{"text": "The quick brown fox"}`, `{"text": " jumps over the \"lazy\" dog"}`, gcCallOK, `{"text":"after"}`)},
		{name: "whitespace seam",
			acc:  gcReply("MAX_TOKENS", gcUsage1, `{"text":"Line one.\n"}`),
			next: gcReply("MAX_TOKENS", gcUsage2, `{"text":"\n\nLine two."}`),
			want: gcReply("MAX_TOKENS", `{"promptTokenCount":170,"candidatesTokenCount":70,"totalTokenCount":250,"thoughtsTokenCount":10}`,
				`{"text":"Line one.\nLine two."}`)},
		{name: "acc without text: next's text is a new part",
			acc:  gcReply("MAX_TOKENS", gcUsage1, gcThought),
			next: gcReply("STOP", gcUsage2, `{"text":"x","thought":true}`, `{"text":"Plan it. Now"}`, `{"text":" go"}`),
			want: gcReply("STOP", `{"promptTokenCount":170,"candidatesTokenCount":70,"totalTokenCount":250,"thoughtsTokenCount":10}`,
				gcThought, `{"text":"Plan it. Now"}`, `{"text":" go"}`)},
		{name: "acc ends with a call",
			acc:  gcReply("MAX_TOKENS", gcUsage1, `{"text":"Reading it"}`, gcCallOK),
			next: gcReply("STOP", gcUsage2, `{"text":"Reading it now"}`),
			want: gcReply("STOP", `{"promptTokenCount":170,"candidatesTokenCount":70,"totalTokenCount":250,"thoughtsTokenCount":10}`,
				`{"text":"Reading it"}`, gcCallOK, `{"text":"Reading it now"}`)},
		{name: "next only repeats",
			acc:  gcReply("MAX_TOKENS", gcUsage1, accText...),
			next: gcReply("STOP", gcUsage2, `{"text":"brown fox jumps over"}`),
			want: gcReply("STOP", `{"promptTokenCount":170,"candidatesTokenCount":70,"totalTokenCount":250,"thoughtsTokenCount":10}`,
				accText...)},
		{name: "next without parts or usage",
			acc:  gcReply("MAX_TOKENS", gcUsage1, accText...),
			next: []byte(`{"candidates":[{"finishReason":"STOP","index":0}]}`),
			want: gcReply("STOP", gcUsage1, accText...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acc0, next0 := bytes.Clone(c.acc), bytes.Clone(c.next)
			got, err := gemCC.ContinueReply(c.acc, c.next)
			require.NoError(t, err)
			require.Equal(t, string(c.want), string(got))
			require.Equal(t, acc0, c.acc)
			require.Equal(t, next0, c.next)
		})
	}
	// The text is acc's followed by the trimmed continuation.
	acc := gcReply("MAX_TOKENS", gcUsage1, accText...)
	got, err := gemCC.ContinueReply(acc, gcReply("STOP", gcUsage2, `{"text":"fox jumps over the lazy dog."}`))
	require.NoError(t, err)
	view, err := codecFor(Gemini).ParseReply(got)
	require.NoError(t, err)
	require.Equal(t, "The quick brown fox jumps over the lazy dog.", view.Text)
	require.Equal(t, conv.StopEnd, view.Stop)
	require.EqualValues(t, 170, view.Usage.InputTokens)
	require.EqualValues(t, 80, view.Usage.OutputTokens)

	for _, bad := range [][2]string{{`{`, `{}`}, {`{}`, `{}`}, {string(acc), `[]`}, {string(acc), `{"candidates":[{"content":{"parts":1}}]}`}} {
		_, err := gemCC.ContinueReply([]byte(bad[0]), []byte(bad[1]))
		require.Error(t, err, bad)
	}
}

// Streams from the mock provider.

func gcStreams(t testing.TB, opts mock.Options, replies ...mock.Reply) []string {
	t.Helper()
	m := mock.New(opts)
	require.NoError(t, m.Start())
	defer m.Close()
	m.Script(replies...)
	out := make([]string, len(replies))
	for i := range replies {
		resp, err := http.Post(m.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "application/json",
			strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		out[i] = string(b)
	}
	return out
}

// gcStep is one upstream stream of a turn and what the engine does after it.
type gcStep struct {
	sse    string
	remove []int // Release(remove, nil)
}

// gcRun splices streams (each after the first started with Continue) and
// returns the agent's output, what each call returned, and the replies.
func gcRun(t testing.TB, steps []gcStep) (out []byte, parts [][]byte, replies [][]byte) {
	t.Helper()
	sp := Gemini.NewSplicer().(ContinueSplicer)
	for i, st := range steps {
		if i > 0 {
			sp.Continue()
		}
		b := gsFeed(t, sp, st.sse)
		require.True(t, sp.Done())
		reply, err := sp.Reply()
		require.NoError(t, err)
		replies = append(replies, reply)
		rel, err := sp.Release(st.remove, nil)
		require.NoError(t, err)
		parts = append(parts, b, rel)
	}
	fin, err := sp.Finish()
	require.NoError(t, err)
	parts = append(parts, fin)
	return bytes.Join(parts, nil), parts, replies
}

// gcExpect checks the agent's stream against the non-streaming engine:
// ContinueReply over the replies (each with its removed calls dropped).
func gcExpect(t testing.TB, steps []gcStep, out []byte, replies [][]byte) *gsAgent {
	t.Helper()
	a := gsParse(t, out)
	var acc []byte
	for i, r := range replies {
		r, err := gemTC.EditReply(r, steps[i].remove, nil)
		require.NoError(t, err)
		if i == 0 {
			acc = r
			continue
		}
		acc, err = gemCC.ContinueReply(acc, r)
		require.NoError(t, err)
	}
	var want genai.GenerateContentResponse
	require.NoError(t, json.Unmarshal(acc, &want))
	view, err := codecFor(Gemini).ParseReply(acc)
	require.NoError(t, err)
	require.Equal(t, view.Text, a.text)
	require.Equal(t, want.UsageMetadata, a.usage)
	require.Equal(t, want.Candidates[0].FinishReason, a.finish)
	require.Len(t, a.calls, len(view.ToolCalls))
	require.Equal(t, map[string]bool{want.ResponseID: true}, a.ids)
	// One terminal chunk, the last one; no chunk without parts.
	for i, c := range a.chunks {
		require.Len(t, c.Candidates, 1)
		require.NotEmpty(t, c.Candidates[0].Content.Parts, "chunk %d", i)
		if i < len(a.chunks)-1 {
			require.Empty(t, c.Candidates[0].FinishReason, "chunk %d", i)
			require.True(t, c.UsageMetadata == nil || c.UsageMetadata.CandidatesTokenCount == 0, "chunk %d", i)
		}
	}
	require.NotEmpty(t, a.chunks[len(a.chunks)-1].Candidates[0].FinishReason)
	return a
}

// gcData returns the data of the events of an SSE text.
func gcData(t testing.TB, sse string) []string {
	var out []string
	for _, d := range gsEvents(t, []byte(sse)) {
		out = append(out, string(d))
	}
	return out
}

func gcUsage(in, out int, reasoning ...int) mock.Usage {
	u := mock.Usage{Input: in, Output: out}
	if len(reasoning) > 0 {
		u.Reasoning = reasoning[0]
	}
	return u
}

const (
	gcPartial = "The migration copies every row into the new table, then rebuilds the ind"
	gcCont    = "then rebuilds the indexes and checks the row counts."
)

// A stream cut by the output limit mid-text, continued by a stream that
// repeats its last words.
func TestGeminiSplicerContinue(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "Plan.", Signature: "sig"}, Usage: gcUsage(100, 40)},
		mock.Reply{ID: "r2", Text: gcCont, Usage: gcUsage(140, 12)})
	steps := []gcStep{{sse: sse[0]}, {sse: sse[1]}}
	out, parts, replies := gcRun(t, steps)
	a := gcExpect(t, steps, out, replies)
	require.Equal(t, gcPartial+TrimSeam(gcPartial, gcCont), a.text)
	require.Equal(t, gcPartial+"exes and checks the row counts.", a.text)
	require.Equal(t, "Plan.", a.thought)
	require.Equal(t, genai.FinishReasonStop, a.finish)
	require.EqualValues(t, 140, a.usage.PromptTokenCount)
	require.EqualValues(t, 40+12, a.usage.CandidatesTokenCount)
	require.EqualValues(t, 192, a.usage.TotalTokenCount)

	// Event by event: the first stream passes as it came but its terminal
	// chunk; Release sends nothing.
	in1 := strings.SplitAfter(sse[0], "\r\n\r\n")
	in1 = in1[:len(in1)-1]
	require.Equal(t, strings.Join(in1[:len(in1)-1], ""), string(parts[0]))
	require.Empty(t, parts[1])
	// The held terminal chunk's text goes first, without finishReason and
	// usage; the continuation's chunks are held by the seam filter until its
	// end; the filtered text comes with finishReason and the summed usage.
	evs := gcData(t, string(parts[2]))
	term := gcData(t, sse[0])
	last := term[len(term)-1]
	require.Equal(t, []string{strings.Replace(last,
		`,"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":40,"totalTokenCount":140}`,
		`,"index":0}]`, 1)}, evs)
	require.Empty(t, parts[3])
	require.Equal(t, `data: {"candidates":[{"content":{"parts":[{"text":"exes and checks the row counts."}],"role":"model"},"finishReason":"STOP","index":0}],`+
		`"usageMetadata":{"promptTokenCount":140,"candidatesTokenCount":52,"totalTokenCount":192},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`+"\r\n\r\n",
		string(parts[4]))

	// Reply is the continuation's own reply.
	view, err := codecFor(Gemini).ParseReply(replies[1])
	require.NoError(t, err)
	require.Equal(t, gcCont, view.Text)
	require.Equal(t, "r2", gjson.GetBytes(replies[1], "responseId").Str)
	require.Equal(t, conv.StopMaxTokens, mustParse(t, replies[0]).Stop)
}

func mustParse(t testing.TB, reply []byte) *conv.Reply {
	t.Helper()
	r, err := codecFor(Gemini).ParseReply(reply)
	require.NoError(t, err)
	return r
}

// A continuation longer than the seam window: the chunk that decides the
// seam carries the filtered text, later chunks pass as they came (with the
// first stream's responseId).
func TestGeminiSplicerContinueLong(t *testing.T) {
	long := "rebuilds the indexes" + strings.Repeat(" and checks every row", 20) + "."
	sse := gcStreams(t, mock.Options{ChunkSize: 16},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Usage: gcUsage(100, 40)},
		mock.Reply{ID: "r2", Text: long, Usage: gcUsage(140, 60)})
	steps := []gcStep{{sse: sse[0]}, {sse: sse[1]}}
	out, parts, replies := gcRun(t, steps)
	a := gcExpect(t, steps, out, replies)
	require.Equal(t, gcPartial+strings.TrimPrefix(long, "rebuilds the ind"), a.text)

	in2 := gcData(t, sse[1])
	evs := gcData(t, string(parts[2]))
	decide := (SeamWindow + 15) / 16 // chunks the filter needs
	require.Len(t, evs, 1+1+len(in2)-1-decide)
	require.Contains(t, evs[1], `{"text":"exes and checks every row`)
	for i, d := range in2[decide : len(in2)-1] {
		require.Equal(t, strings.Replace(d, `"responseId":"r2"`, `"responseId":"r1"`, 1), evs[2+i])
	}
	// The terminal chunk is re-sent with the summed usage.
	fin := gcData(t, string(parts[4]))
	require.Len(t, fin, 1)
	require.Equal(t, strings.Replace(strings.Replace(in2[len(in2)-1], `"responseId":"r2"`, `"responseId":"r1"`, 1),
		`{"promptTokenCount":140,"candidatesTokenCount":60,"totalTokenCount":200}`,
		`{"promptTokenCount":140,"candidatesTokenCount":100,"totalTokenCount":240}`, 1), fin[0])
}

// Two continuations in a row.
func TestGeminiSplicerContinueTwice(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: "First part of the answer, which goes on and o", Stop: "max_tokens", Usage: gcUsage(10, 11)},
		mock.Reply{ID: "r2", Text: "goes on and on, second part, cut aga", Stop: "max_tokens", Usage: gcUsage(20, 9)},
		mock.Reply{ID: "r3", Text: " part, cut again; the end.", Usage: gcUsage(30, 7)})
	steps := []gcStep{{sse: sse[0]}, {sse: sse[1]}, {sse: sse[2]}}
	out, _, replies := gcRun(t, steps)
	a := gcExpect(t, steps, out, replies)
	require.Equal(t, "First part of the answer, which goes on and on, second part, cut again; the end.", a.text)
	require.EqualValues(t, 27, a.usage.CandidatesTokenCount)
	require.EqualValues(t, 30, a.usage.PromptTokenCount)
	require.Equal(t, genai.FinishReasonStop, a.finish)
}

// A continuation that thinks (dropped) and ends with a tool call (held until
// Release).
func TestGeminiSplicerContinueThinkingAndCall(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "First plan."}, Usage: gcUsage(100, 40)},
		mock.Reply{ID: "r2", Text: gcCont, Thinking: &mock.Thinking{Text: "Where was I?", Signature: "sig2"},
			ToolCalls: []mock.ToolCall{{Name: "read_file", Args: `{"path":"a.go"}`}}, Usage: gcUsage(140, 30, 5)})
	steps := []gcStep{{sse: sse[0]}, {sse: sse[1]}}
	out, parts, replies := gcRun(t, steps)
	a := gcExpect(t, steps, out, replies)
	require.Equal(t, "First plan.", a.thought, "the continuation's thinking is dropped")
	require.Equal(t, gcPartial+"exes and checks the row counts.", a.text)
	require.Len(t, a.calls, 1)
	require.Equal(t, "read_file", a.calls[0].FunctionCall.Name)
	require.Equal(t, []byte("sig2"), a.calls[0].ThoughtSignature)
	require.EqualValues(t, 5, a.usage.ThoughtsTokenCount)
	require.NotContains(t, string(parts[2]), "Where was I")
	require.NotContains(t, string(parts[2]), "functionCall")
	// The call comes at Release, after all the text.
	require.Contains(t, string(parts[3]), `"functionCall"`)
	require.NotContains(t, string(parts[3]), `"text"`)
	require.Equal(t, `{"text":""}`, gjson.Get(gcData(t, string(parts[4]))[0], "candidates.0.content.parts.0").Raw)
	// Each continuation chunk the agent got has text.
	for _, d := range gcData(t, string(parts[2])) {
		gjson.Get(d, "candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
			require.NotEmpty(t, p.Get("text").Str, d)
			require.False(t, p.Get("thought").Bool(), d)
			return true
		})
	}
	// Removing the call instead: none reaches the agent.
	steps[1].remove = []int{0}
	out, _, replies = gcRun(t, steps)
	a = gcExpect(t, steps, out, replies)
	require.Empty(t, a.calls)
}

// A truncated stream whose last part is a (cut) tool call: the engine
// removes it, and the continuation continues the text before it, or opens
// the text when there was none.
func TestGeminiSplicerContinueAfterCall(t *testing.T) {
	t.Run("text before the call", func(t *testing.T) {
		sse := gcStreams(t, mock.Options{ChunkSize: 8},
			mock.Reply{ID: "r1", Text: "I will read the config file", Stop: "max_tokens",
				ToolCalls: []mock.ToolCall{{Name: "read_file", Args: `{"path":"conf`}}, Usage: gcUsage(10, 20)},
			mock.Reply{ID: "r2", Text: "the config file first, then the tests.", Usage: gcUsage(30, 10)})
		steps := []gcStep{{sse: sse[0], remove: []int{0}}, {sse: sse[1]}}
		out, parts, replies := gcRun(t, steps)
		a := gcExpect(t, steps, out, replies)
		require.Equal(t, "I will read the config file first, then the tests.", a.text)
		require.Empty(t, a.calls)
		require.Empty(t, parts[1], "nothing to release")
		require.Equal(t, genai.FinishReasonStop, a.finish)
	})
	t.Run("no text before the call", func(t *testing.T) {
		sse := gcStreams(t, mock.Options{ChunkSize: 8},
			mock.Reply{ID: "r1", Thinking: &mock.Thinking{Text: "Read it."}, Stop: "max_tokens",
				ToolCalls: []mock.ToolCall{{Name: "read_file", Args: `{"pa`}}, Usage: gcUsage(10, 20)},
			mock.Reply{ID: "r2", Text: "Read it. Reading the file now.", Usage: gcUsage(30, 10)})
		steps := []gcStep{{sse: sse[0], remove: []int{0}}, {sse: sse[1]}}
		out, parts, replies := gcRun(t, steps)
		a := gcExpect(t, steps, out, replies)
		require.Equal(t, "Read it. Reading the file now.", a.text, "no seam with the thought")
		require.Equal(t, "Read it.", a.thought)
		// The continuation's chunks pass at once.
		in2 := gcData(t, sse[1])
		evs := gcData(t, string(parts[2]))
		require.Len(t, evs, len(in2)-1)
		for i := range evs {
			require.Equal(t, strings.Replace(in2[i], `"responseId":"r2"`, `"responseId":"r1"`, 1), evs[i])
		}
	})
	t.Run("calls kept", func(t *testing.T) {
		sse := gcStreams(t, mock.Options{ChunkSize: 8},
			mock.Reply{ID: "r1", Text: "I will read the config file", Stop: "max_tokens",
				ToolCalls: []mock.ToolCall{{Name: "read_file", Args: `{"path":"a"}`}}, Usage: gcUsage(10, 20)},
			mock.Reply{ID: "r2", Text: "the config file first.", Usage: gcUsage(30, 10)})
		steps := []gcStep{{sse: sse[0]}, {sse: sse[1]}}
		out, _, replies := gcRun(t, steps)
		a := gcExpect(t, steps, out, replies)
		require.Equal(t, "I will read the config filethe config file first.", a.text, "the call closed the text")
		require.Len(t, a.calls, 1)
	})
}

// A continuation that only repeats the text sends no empty chunk.
func TestGeminiSplicerContinueOnlyRepeats(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Usage: gcUsage(100, 40)},
		mock.Reply{ID: "r2", Text: "then rebuilds the ind", Thinking: &mock.Thinking{Text: "Hm."}, Usage: gcUsage(140, 3)})
	steps := []gcStep{{sse: sse[0]}, {sse: sse[1]}}
	out, parts, replies := gcRun(t, steps)
	a := gcExpect(t, steps, out, replies)
	require.Equal(t, gcPartial, a.text)
	require.Len(t, gcData(t, string(parts[2])), 1, "only the first stream's held text")
	require.Equal(t, `{"text":""}`, gjson.Get(gcData(t, string(parts[4]))[0], "candidates.0.content.parts.0").Raw)
}

// A continuation cut before its terminal chunk: what the seam filter holds
// goes out before the final chunk.
func TestGeminiSplicerContinueCut(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Usage: gcUsage(100, 40)},
		mock.Reply{ID: "r2", Text: gcCont, Usage: gcUsage(140, 12)})
	evs := strings.SplitAfter(sse[1], "\r\n\r\n")
	cut := strings.Join(evs[:3], "")
	sp := Gemini.NewSplicer().(ContinueSplicer)
	out := gsFeed(t, sp, sse[0])
	_, err := sp.Release(nil, nil)
	require.NoError(t, err)
	sp.Continue()
	out = append(out, gsFeed(t, sp, cut)...)
	require.False(t, sp.Done())
	fin, err := sp.Finish()
	require.NoError(t, err)
	out = append(out, fin...)
	a := gsParse(t, out)
	require.Equal(t, gcPartial+"exe", a.text)
	ev := gcData(t, string(fin))
	require.Len(t, ev, 2)
	require.Contains(t, ev[0], `"parts":[{"text":"exe"}]`)
	require.NotContains(t, ev[0], "usageMetadata")
}

// A stream the engine does not continue is unchanged, MAX_TOKENS or not;
// Continue after Finish does nothing.
func TestGeminiSplicerTruncatedPassThrough(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "x", Signature: "s"}})
	sp := Gemini.NewSplicer().(ContinueSplicer)
	out := gsFeed(t, sp, sse[0])
	rel, err := sp.Release(nil, nil)
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	require.Equal(t, sse[0], string(out)+string(rel)+string(fin))
	sp.Continue()
	fin, err = sp.Finish()
	require.NoError(t, err)
	require.Empty(t, fin)
}

// The genai SDK's Chat takes a continued turn as one model turn with the
// merged text.
func TestGeminiSplicerContinueGenaiChat(t *testing.T) {
	sse := gcStreams(t, mock.Options{ChunkSize: 8},
		mock.Reply{ID: "r1", Text: gcPartial, Stop: "max_tokens", Usage: gcUsage(100, 40)},
		mock.Reply{ID: "r2", Text: gcCont, Usage: gcUsage(140, 12)})
	out, _, _ := gcRun(t, []gcStep{{sse: sse[0]}, {sse: sse[1]}})
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
	var text strings.Builder
	for chunk, err := range chat.SendMessageStream(ctx, genai.Part{Text: "hi"}) {
		require.NoError(t, err)
		text.WriteString(chunk.Text())
	}
	require.Equal(t, gcPartial+"exes and checks the row counts.", text.String())
	h := chat.History(true)
	require.GreaterOrEqual(t, len(h), 2, "the turn is in the curated history")
	require.Equal(t, genai.RoleModel, h[len(h)-1].Role)
}
