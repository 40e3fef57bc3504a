package proxy_test

// End-to-end tests with google.golang.org/genai: generateContent and
// streamGenerateContent (the SDK streams with alt=sse), through shepherd and
// directly against the mock (see e2e_sdk_test.go).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

const e2eGeminiModel = "gemini-e2e"

func e2eGeminiClient(t *testing.T, base string, headers http.Header) *genai.Client {
	t.Helper()
	return e2eGeminiClientWith(t, base, headers, nil)
}

func e2eGeminiClientWith(t *testing.T, base string, headers http.Header, hc *http.Client) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(e2eCtx(t), &genai.ClientConfig{
		APIKey:     "g-e2e",
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    base,
			APIVersion: "v1beta",
			Headers:    headers,
		},
	})
	require.NoError(t, err)
	return c
}

func e2eGeminiContents() []*genai.Content {
	return genai.Text("Show me main.go")
}

func e2eGeminiConfig() *genai.GenerateContentConfig {
	schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	return &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("You are a terse coding agent.", genai.RoleUser),
		Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
			{Name: e2eCall1Name, ParametersJsonSchema: schema},
			{Name: e2eCall2Name, ParametersJsonSchema: schema},
		}}},
		ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true},
	}
}

// e2eGeminiAcc accumulates what the SDK returned, over one response or the
// chunks of a stream.
type e2eGeminiAcc struct {
	text, thought string
	calls         []*genai.FunctionCall
	sigs          [][]byte // thought signatures, in part order
	finish        genai.FinishReason
	usage         *genai.GenerateContentResponseUsageMetadata
	responseID    string
	modelVersion  string
	chunks        []string // each response as JSON, without the HTTP metadata
	headers       http.Header
	err           error
}

func (g *e2eGeminiAcc) add(t *testing.T, r *genai.GenerateContentResponse) {
	t.Helper()
	if r.SDKHTTPResponse != nil && g.headers == nil {
		g.headers = r.SDKHTTPResponse.Headers
	}
	c := *r
	c.SDKHTTPResponse = nil // headers differ by design (shepherd adds its own)
	g.chunks = append(g.chunks, e2eJSON(t, &c))
	require.Len(t, r.Candidates, 1)
	cand := r.Candidates[0]
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if len(p.ThoughtSignature) > 0 {
				g.sigs = append(g.sigs, p.ThoughtSignature)
			}
			switch {
			case p.FunctionCall != nil:
				g.calls = append(g.calls, p.FunctionCall)
			case p.Thought:
				g.thought += p.Text
			default:
				g.text += p.Text
			}
		}
	}
	if cand.FinishReason != "" {
		g.finish = cand.FinishReason
	}
	if r.UsageMetadata != nil {
		g.usage = r.UsageMetadata
	}
	g.responseID = r.ResponseID
	g.modelVersion = r.ModelVersion
}

func e2eCheckGemini(t *testing.T, g *e2eGeminiAcc) {
	t.Helper()
	require.Equal(t, e2eText, g.text)
	require.Equal(t, e2eThinking, g.thought)
	require.Equal(t, [][]byte{[]byte(e2eSignature)}, g.sigs, "one signature, on the first functionCall part")
	require.Len(t, g.calls, 2)
	require.Equal(t, e2eCall1ID, g.calls[0].ID)
	require.Equal(t, e2eCall1Name, g.calls[0].Name)
	require.Equal(t, map[string]any{"path": "main.go", "limit": float64(200)}, g.calls[0].Args)
	require.Equal(t, e2eCall2ID, g.calls[1].ID)
	require.Equal(t, e2eCall2Name, g.calls[1].Name)
	require.Equal(t, map[string]any{"pattern": "func main", "paths": []any{"cmd", "proxy"}, "ignore_case": true, "n": float64(3)}, g.calls[1].Args)
	require.Equal(t, genai.FinishReasonStop, g.finish)
	require.NotNil(t, g.usage)
	require.Equal(t, int32(110), g.usage.PromptTokenCount)
	require.Equal(t, int32(33), g.usage.CandidatesTokenCount)
	require.Equal(t, int32(12), g.usage.ThoughtsTokenCount)
	require.Equal(t, int32(155), g.usage.TotalTokenCount)
	require.Equal(t, int32(7), g.usage.CachedContentTokenCount)
	require.Equal(t, "e2e", g.responseID)
	require.Equal(t, e2eGeminiModel, g.modelVersion)
}

func e2eRunGeminiGenerate(t *testing.T, ctx context.Context, c *genai.Client, cfg *genai.GenerateContentConfig) e2eGeminiAcc {
	t.Helper()
	var g e2eGeminiAcc
	r, err := c.Models.GenerateContent(ctx, e2eGeminiModel, e2eGeminiContents(), cfg)
	if err != nil {
		g.err = err
		return g
	}
	g.add(t, r)
	return g
}

func e2eRunGeminiStream(t *testing.T, ctx context.Context, c *genai.Client, cfg *genai.GenerateContentConfig) e2eGeminiAcc {
	t.Helper()
	var g e2eGeminiAcc
	for r, err := range c.Models.GenerateContentStream(ctx, e2eGeminiModel, e2eGeminiContents(), cfg) {
		if err != nil {
			g.err = err
			break
		}
		g.add(t, r)
	}
	return g
}

func TestE2ESDKGeminiGenerateContent(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("e2e"), e2eReply("e2e"))
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eGeminiAcc {
		return e2eRunGeminiGenerate(t, ctx, e2eGeminiClient(t, base, nil), e2eGeminiConfig())
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckGemini(t, &via)
	require.Equal(t, dir.chunks, via.chunks)
	e2eRequireSameRequests(t, h, 2)
	last, _ := h.mock.Last()
	require.Equal(t, "/v1beta/models/"+e2eGeminiModel+":generateContent", last.Path)
}

func TestE2ESDKGeminiStream(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	h.mock.Script(e2eReply("e2e"), e2eReply("e2e"))
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eGeminiAcc {
		return e2eRunGeminiStream(t, ctx, e2eGeminiClient(t, base, nil), e2eGeminiConfig())
	})
	require.NoError(t, via.err)
	require.NoError(t, dir.err)
	e2eCheckGemini(t, &via)
	require.Equal(t, len(dir.chunks), len(via.chunks), "chunk count")
	require.Equal(t, dir.chunks, via.chunks, "chunk payloads")
	require.Greater(t, len(via.chunks), e2eMinDeltas(), "text arrives in many chunks")
	e2eRequireSameRequests(t, h, 2)
	last, _ := h.mock.Last()
	require.Equal(t, "/v1beta/models/"+e2eGeminiModel+":streamGenerateContent", last.Path)
	require.Equal(t, "alt=sse", last.Query)
}

func TestE2ESDKGeminiErrors(t *testing.T) {
	t.Parallel()
	reply := mock.Reply{ID: "e2e_err", Status: 429, RetryAfter: "1", ErrorMessage: "e2e: quota exhausted, slow down"}
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
			via, dir := e2eViaAndDirect(h, func(base string) genai.APIError {
				c := e2eGeminiClient(t, base, nil)
				var g e2eGeminiAcc
				if stream {
					g = e2eRunGeminiStream(t, ctx, c, e2eGeminiConfig())
				} else {
					g = e2eRunGeminiGenerate(t, ctx, c, e2eGeminiConfig())
				}
				require.Empty(t, g.chunks)
				var apierr genai.APIError
				require.ErrorAs(t, g.err, &apierr)
				return apierr
			})
			require.Equal(t, 429, via.Code)
			require.Equal(t, "RESOURCE_EXHAUSTED", via.Status)
			require.Equal(t, reply.ErrorMessage, via.Message)
			require.Contains(t, via.Error(), reply.ErrorMessage)
			require.Equal(t, dir, via)
			require.Len(t, h.mock.Requests(), 2, "no SDK retries")
		})
	}
}

func TestE2ESDKGeminiMidStreamError(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("e2e_mid")
	r.ErrorAfterEvents = 6
	r.ErrorMessage = "e2e: upstream died mid-stream"
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eGeminiAcc {
		return e2eRunGeminiStream(t, ctx, e2eGeminiClient(t, base, nil), e2eGeminiConfig())
	})
	require.Len(t, via.chunks, 6)
	var apierr genai.APIError
	require.ErrorAs(t, via.err, &apierr)
	require.Equal(t, 500, apierr.Code)
	require.Equal(t, "INTERNAL", apierr.Status)
	require.Equal(t, r.ErrorMessage, apierr.Message)
	require.Equal(t, dir.chunks, via.chunks)
	require.Equal(t, dir.err, via.err)
}

// An upstream that drops the connection mid-stream reaches the SDK through
// shepherd as Gemini's stream error object after the same chunks (directly,
// it is a transport error). The client reads the whole body before
// parsing (a busy client, or a fast network), so that the SDK's scanner sees
// the buffered events and shepherd's error event at once.
func TestE2ESDKGeminiUpstreamCut(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("e2e_cut")
	r.CutAfterEvents = 4
	h.mock.Script(r, r)
	ctx := e2eCtx(t)

	via, dir := e2eViaAndDirect(h, func(base string) e2eGeminiAcc {
		c := e2eGeminiClientWith(t, base, nil, &http.Client{Transport: e2eSlurpTransport{}})
		return e2eRunGeminiStream(t, ctx, c, e2eGeminiConfig())
	})
	require.Error(t, dir.err, "directly, a cut is a transport error")
	require.Len(t, dir.chunks, 4)

	var apierr genai.APIError
	if len(via.chunks) != 4 || !errors.As(via.err, &apierr) {
		t.Fatalf("through shepherd, genai got %d chunks (want 4) and error %v (want a genai.APIError 502).\n"+
			"If shepherd frames its Gemini stream error event with \"\\n\\n\" while Gemini (and the mock) frame events "+
			"with \"\\r\\n\\r\\n\", genai's SSE scanner splits at the first \"\\n\\n\" in its buffer and merges "+
			"every CRLF event buffered before it into one unparseable token.", len(via.chunks), via.err)
	}
	require.Equal(t, dir.chunks, via.chunks)
	require.Equal(t, http.StatusBadGateway, apierr.Code)
	require.Contains(t, apierr.Message, "upstream connection failed")
}

// The same cut on the wire: the error event shepherd appends to a Gemini SSE
// stream must use the upstream's framing ("\r\n\r\n", as Gemini sends).
func TestE2EGeminiCutErrorEventFraming(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	r := e2eReply("e2e_cut")
	r.CutAfterEvents = 2
	h.mock.Script(r)
	resp, body := do(t, "POST", h.URL+"/v1beta/models/"+e2eGeminiModel+":streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, geminiHeaders())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := strings.SplitAfter(string(body), "\r\n\r\n")
	if events[len(events)-1] == "" {
		events = events[:len(events)-1]
	}
	require.Len(t, events, 3, "two upstream events, then shepherd's error event: %q", body)
	last := events[2]
	require.Contains(t, last, `"code":502`)
	require.True(t, strings.HasSuffix(last, "\r\n\r\n"),
		"shepherd's Gemini stream error event is framed %q, not like the stream's events (\"\\r\\n\\r\\n\")", last)
}

// e2eSlurpTransport reads each response body in full before handing it to the
// client, keeping the read error (if any) for after the bytes.
type e2eSlurpTransport struct{}

func (e2eSlurpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), e2eErrReader{rerr}))
	return resp, nil
}

// e2eErrReader returns err, or io.EOF when err is nil.
type e2eErrReader struct{ err error }

func (e e2eErrReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

func TestE2ESDKGeminiMalformed(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)
	c := e2eGeminiClient(t, h.URL, nil)

	cfg := e2eGeminiConfig()
	cfg.HTTPOptions = &genai.HTTPOptions{ExtrasRequestProvider: func(body map[string]any) map[string]any {
		body["contents"] = "not a list"
		return body
	}}
	for _, g := range []e2eGeminiAcc{e2eRunGeminiGenerate(t, ctx, c, cfg), e2eRunGeminiStream(t, ctx, c, cfg)} {
		var apierr genai.APIError
		require.ErrorAs(t, g.err, &apierr)
		require.Equal(t, http.StatusBadRequest, apierr.Code)
		require.Equal(t, "INVALID_ARGUMENT", apierr.Status)
		require.Contains(t, apierr.Message, "contents")
	}
	require.Empty(t, h.mock.Requests(), "a malformed body never reaches the upstream")
}

func TestE2ESDKGeminiSessionHeader(t *testing.T) {
	t.Parallel()
	h := e2eHarness(t)
	ctx := e2eCtx(t)
	c := e2eGeminiClient(t, h.URL, http.Header{"X-Session-Id": {"sess-gemini"}})

	for name, g := range map[string]e2eGeminiAcc{
		"generate": e2eRunGeminiGenerate(t, ctx, c, e2eGeminiConfig()),
		"stream":   e2eRunGeminiStream(t, ctx, c, e2eGeminiConfig()),
	} {
		require.NoError(t, g.err, name)
		require.NotNil(t, g.headers, name)
		require.Equal(t, "sess-gemini", g.headers.Get("X-Shepherd-Session"), name)
		require.NotEmpty(t, g.headers.Get("X-Shepherd-Request-Id"), name)
	}
}
