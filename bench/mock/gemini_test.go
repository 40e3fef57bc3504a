package mock_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

type geminiSeen struct {
	text, thought string
	calls         []*genai.FunctionCall
	callSig       []byte
	thoughtSig    []byte
	finish        genai.FinishReason
	usage         *genai.GenerateContentResponseUsageMetadata
	responseID    string
	modelVersion  string
}

func (g *geminiSeen) add(t *testing.T, r *genai.GenerateContentResponse) {
	t.Helper()
	require.Len(t, r.Candidates, 1)
	cand := r.Candidates[0]
	for _, p := range cand.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			g.calls = append(g.calls, p.FunctionCall)
			if len(p.ThoughtSignature) > 0 {
				g.callSig = p.ThoughtSignature
			}
		case p.Thought:
			g.thought += p.Text
			if len(p.ThoughtSignature) > 0 {
				g.thoughtSig = p.ThoughtSignature
			}
		default:
			g.text += p.Text
		}
	}
	if cand.FinishReason != "" {
		g.finish = cand.FinishReason
	}
	g.usage = r.UsageMetadata
	g.responseID = r.ResponseID
	g.modelVersion = r.ModelVersion
}

func checkGeminiRich(t *testing.T, g *geminiSeen, id string) {
	t.Helper()
	require.Equal(t, richText, g.text)
	require.Equal(t, richThinking, g.thought)
	require.Equal(t, richSignature, string(g.callSig), "signature on the first functionCall part")
	require.Empty(t, g.thoughtSig)
	require.Len(t, g.calls, 2)
	require.Equal(t, "read_file", g.calls[0].Name)
	require.Empty(t, g.calls[0].ID, "Gemini ids only when scripted")
	require.Equal(t, map[string]any{"path": "main.go"}, g.calls[0].Args)
	require.Equal(t, "call_custom", g.calls[1].ID)
	require.Equal(t, "grep", g.calls[1].Name)
	require.Equal(t, map[string]any{"pattern": "func main", "paths": []any{"a", "b"}, "n": float64(3)}, g.calls[1].Args)
	require.Equal(t, genai.FinishReasonStop, g.finish)
	require.Equal(t, int32(110), g.usage.PromptTokenCount)
	require.Equal(t, int32(33), g.usage.CandidatesTokenCount)
	require.Equal(t, int32(12), g.usage.ThoughtsTokenCount)
	require.Equal(t, int32(155), g.usage.TotalTokenCount)
	require.Equal(t, int32(7), g.usage.CachedContentTokenCount)
	require.Equal(t, id, g.responseID)
	require.Equal(t, "gemini-2.5-flash", g.modelVersion)
}

func TestGeminiGenerateContent(t *testing.T) {
	s := start(t, mock.Options{})
	s.Script(richReply())
	c := genaiClient(t, s)
	r, err := c.Models.GenerateContent(ctxT(t), "gemini-2.5-flash", genai.Text("hi"), nil)
	require.NoError(t, err)
	var g geminiSeen
	g.add(t, r)
	checkGeminiRich(t, &g, "mock000001")

	last, _ := s.Last()
	require.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", last.Path)
	require.Equal(t, "gemini", last.API)
	require.Equal(t, "gm-test", last.Header.Get("X-Goog-Api-Key"))
}

func TestGeminiStream(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 9})
	s.Script(richReply())
	c := genaiClient(t, s)
	var g geminiSeen
	n := 0
	for r, err := range c.Models.GenerateContentStream(ctxT(t), "gemini-2.5-flash", genai.Text("hi"), nil) {
		require.NoError(t, err)
		g.add(t, r)
		n++
	}
	require.Greater(t, n, 10)
	checkGeminiRich(t, &g, "mock000001")
	last, _ := s.Last()
	require.Equal(t, "alt=sse", last.Query)
	require.True(t, last.Stream)
}

func TestGeminiThoughtSignatureWithoutCalls(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 4})
	s.Script(
		mock.Reply{Text: "answer", Thinking: &mock.Thinking{Text: "hmm, thinking", Signature: "sig-1"}, Stop: "max_tokens"},
		mock.Reply{Text: "answer", Thinking: &mock.Thinking{Text: "hmm, thinking", Signature: "sig-1"}, Stop: "max_tokens"},
	)
	c := genaiClient(t, s)
	r, err := c.Models.GenerateContent(ctxT(t), "gemini-x", genai.Text("hi"), nil)
	require.NoError(t, err)
	var g geminiSeen
	g.add(t, r)
	require.Equal(t, "sig-1", string(g.thoughtSig))
	require.Equal(t, genai.FinishReasonMaxTokens, g.finish)

	g = geminiSeen{}
	for r, err := range c.Models.GenerateContentStream(ctxT(t), "gemini-x", genai.Text("hi"), nil) {
		require.NoError(t, err)
		g.add(t, r)
	}
	require.Equal(t, "sig-1", string(g.thoughtSig))
	require.Equal(t, "hmm, thinking", g.thought)
	require.Equal(t, "answer", g.text)
	require.Equal(t, genai.FinishReasonMaxTokens, g.finish)
}

func TestGeminiErrors(t *testing.T) {
	s := start(t, mock.Options{})
	c := genaiClient(t, s)
	ctx := ctxT(t)

	s.Script(mock.Reply{Status: 429, ErrorMessage: "quota"})
	_, err := c.Models.GenerateContent(ctx, "gemini-x", genai.Text("hi"), nil)
	var apierr genai.APIError
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, 429, apierr.Code)
	require.Equal(t, "RESOURCE_EXHAUSTED", apierr.Status)
	require.Equal(t, "quota", apierr.Message)

	s.Script(mock.Reply{Status: 503})
	for _, err := range c.Models.GenerateContentStream(ctx, "gemini-x", genai.Text("hi"), nil) {
		require.ErrorAs(t, err, &apierr)
		require.Equal(t, 503, apierr.Code)
		require.Equal(t, "UNAVAILABLE", apierr.Status)
		break
	}

	s.Script(mock.Reply{Text: strings.Repeat("y", 100), ErrorAfterEvents: 3})
	var ok int
	var streamErr error
	for r, err := range c.Models.GenerateContentStream(ctx, "gemini-x", genai.Text("hi"), nil) {
		if err != nil {
			streamErr = err
			break
		}
		require.NotNil(t, r)
		ok++
	}
	require.Equal(t, 3, ok)
	require.ErrorAs(t, streamErr, &apierr)
	require.Equal(t, 500, apierr.Code)
	require.Equal(t, "INTERNAL", apierr.Status)
}

// Without alt=sse, streamGenerateContent answers a JSON array sent element
// by element: "[" elem ",\r\n" elem … "]".
func TestGeminiJSONArrayStream(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 10})
	s.Script(richReply())
	resp := post(t, s.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent", `{"contents":[]}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "application/json; charset=UTF-8", resp.Header.Get("Content-Type"))
	body := readAll(t, resp)
	require.True(t, bytes.HasPrefix(body, []byte("[{")))
	require.True(t, bytes.HasSuffix(body, []byte("}]")))
	require.Contains(t, string(body), "},\r\n{")

	var chunks []json.RawMessage
	require.NoError(t, json.Unmarshal(body, &chunks))
	require.Greater(t, len(chunks), 10)
	var g geminiSeen
	for _, raw := range chunks {
		var r genai.GenerateContentResponse
		require.NoError(t, json.Unmarshal(raw, &r))
		g.add(t, &r)
	}
	checkGeminiRich(t, &g, "mock000001")

	// A mid-stream error is the last array element; the array stays valid JSON.
	s.Script(mock.Reply{Text: strings.Repeat("z", 50), ErrorAfterEvents: 2})
	body = readAll(t, post(t, s.URL()+"/v1beta/models/gemini-x:streamGenerateContent", `{}`))
	var elems []map[string]any
	require.NoError(t, json.Unmarshal(body, &elems), string(body))
	require.Len(t, elems, 3)
	require.Contains(t, elems[2], "error")
}

func TestGeminiModelsAndCountTokens(t *testing.T) {
	s := start(t, mock.Options{CountTokens: 9})
	c := genaiClient(t, s)
	ctx := ctxT(t)
	page, err := c.Models.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, page.Items, 3)
	require.Equal(t, "models/gemini-2.5-flash", page.Items[2].Name)

	ct, err := c.Models.CountTokens(ctx, "gemini-x", genai.Text("hello"), nil)
	require.NoError(t, err)
	require.Equal(t, int32(9), ct.TotalTokens)
}

func TestGeminiSSEFraming(t *testing.T) {
	for _, lf := range []bool{false, true} {
		s := start(t, mock.Options{GeminiLF: lf})
		s.Script(mock.Reply{Text: strings.Repeat("q", 40), ErrorAfterEvents: 2})
		body := string(readAll(t, post(t, s.URL()+"/v1beta/models/g:streamGenerateContent?alt=sse", `{}`)))
		sep := "\r\n\r\n"
		if lf {
			sep = "\n\n"
		}
		parts := strings.Split(strings.TrimSuffix(body, sep), sep)
		require.Len(t, parts, 3, "lf=%v", lf)
		for _, p := range parts {
			require.True(t, strings.HasPrefix(p, "data: {"), p)
			require.NotContains(t, p, "\n")
		}
		require.Contains(t, parts[2], `"error"`)
	}
}
