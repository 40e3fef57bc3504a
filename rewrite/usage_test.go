package rewrite_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// usageRequest is, per API, the path and body of a request to the mock
// upstream, JSON and streamed.
var usageRequest = map[string]struct{ path, stream, body, streamBody string }{
	"anthropic": {"/v1/messages", "/v1/messages",
		`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	"openai_chat": {"/v1/chat/completions", "/v1/chat/completions",
		`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
	"openai_responses": {"/v1/responses", "/v1/responses",
		`{"model":"gpt-5","input":"hi"}`,
		`{"model":"gpt-5","stream":true,"input":"hi"}`},
	"gemini": {"/v1beta/models/gemini-2.5-flash:generateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
}

// TestUsageEveryAPI checks the usage every API's reply parsing reports,
// from a JSON reply, from the reply a stream splicer assembles (what the
// turn engine parses) and from the stream accumulator: input without the
// cached part, output with reasoning, cache reads, and cache writes where
// the API reports them (Anthropic only).
func TestUsageEveryAPI(t *testing.T) {
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			req, ok := usageRequest[api.Name]
			require.True(t, ok, "add %s to usageRequest", api.Name)
			u := mock.Usage{Input: 100, Output: 40, CacheRead: 30, Reasoning: 7}
			want := conv.Usage{InputTokens: 100, OutputTokens: 40, CacheReadTokens: 30}
			if api.Name == "anthropic" {
				u.CacheWrite, want.CacheWriteTokens = 5, 5
			}
			m := mock.New(mock.Options{})
			require.NoError(t, m.Start())
			defer m.Close()
			m.Script(mock.Reply{Text: "Hello there.", Usage: u}, mock.Reply{Text: "Hello there.", Usage: u})
			c := apitest.CodecFor(api)

			body := usagePost(t, m.URL()+req.path, req.body)
			r, err := c.ParseReply(body)
			require.NoError(t, err)
			require.Equal(t, want, r.Usage, "JSON reply")

			sse := usagePost(t, m.URL()+req.stream, req.streamBody)
			sp := api.NewSplicer()
			require.NotNil(t, sp)
			rd := rewrite.NewReader(strings.NewReader(string(sse)))
			for {
				ev, err := rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				_, err = sp.Feed(&ev)
				require.NoError(t, err)
			}
			require.True(t, sp.Done())
			assembled, err := sp.Reply()
			require.NoError(t, err)
			r, err = c.ParseReply(assembled)
			require.NoError(t, err)
			require.Equal(t, want, r.Usage, "the splicer's reply: %s", assembled)

			_, acc := apitest.DecodeSSE(t, c, sse)
			require.Equal(t, want, acc.Usage, "the stream accumulator")
		})
	}
}

func usagePost(t *testing.T, url, body string) []byte {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return b
}

// TestUsageCachedClamped: a cached count larger than the prompt count (a
// provider quirk) gives no negative input.
func TestUsageCachedClamped(t *testing.T) {
	c := apitest.CodecFor(mustAPI(t, "openai_chat"))
	r, err := c.ParseReply([]byte(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}}}`))
	require.NoError(t, err)
	require.Equal(t, conv.Usage{OutputTokens: 1, CacheReadTokens: 9}, r.Usage)
}

func mustAPI(t *testing.T, name string) *rewrite.Descriptor {
	t.Helper()
	api, err := apis.Lookup(name)
	require.NoError(t, err)
	return api
}
