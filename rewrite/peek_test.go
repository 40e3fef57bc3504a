package rewrite

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPeekRequest(t *testing.T) {
	h, err := PeekRequest(Anthropic, []byte(`{"model":"m","stream":true,"metadata":{"user_id":"u_1"},"prompt_cache_key":"conv-9","messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	require.Equal(t, SessionHints{Stream: true, MetadataUserID: "u_1", PromptCacheKey: "conv-9"}, h)

	h, err = PeekRequest(Anthropic, []byte(" {\"stream\":null,\"metadata\":null}\n"))
	require.NoError(t, err)
	require.Equal(t, SessionHints{}, h)

	for body, want := range map[string]string{
		`{"model":`:                    "body is not valid JSON",
		`[1,2]`:                        "body must be a JSON object",
		`{"stream":"yes"}`:             "stream must be a boolean",
		`{"metadata":{"user_id":7}}`:   "metadata.user_id must be a string",
		`{"metadata":"x"}`:             "metadata must be an object",
		`{"prompt_cache_key":{"a":1}}`: "prompt_cache_key must be a string",
	} {
		_, err := PeekRequest(Anthropic, []byte(body))
		require.Error(t, err, body)
		require.True(t, errors.Is(err, ErrMalformed), body)
		require.Contains(t, err.Error(), want, body)
	}
}

// The hints agree with the full view on every fixture.
func TestPeekRequestAgreesWithParseRequest(t *testing.T) {
	for _, api := range []*Descriptor{Anthropic, OpenAIChat, OpenAIResponses, Gemini} {
		body := fixture(t, api, "request.json")
		view, err := codecFor(api).ParseRequest(body)
		require.NoError(t, err)
		h, err := PeekRequest(api, body)
		require.NoError(t, err)
		require.Equal(t, view.Stream, h.Stream, api)
		require.Equal(t, view.MetadataUserID, h.MetadataUserID, api)
		require.Equal(t, view.PromptCacheKey, h.PromptCacheKey, api)
	}
}

func BenchmarkPeekRequest(b *testing.B) {
	body := fixture(b, Anthropic, "request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := PeekRequest(Anthropic, body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPeekRequestTopLevelPerAPI(t *testing.T) {
	for _, tc := range []struct {
		api  *Descriptor
		body string
		want string
	}{
		{OpenAIChat, `{"model":"m","messages":{"role":"user"}}`, "messages must be an array"},
		{OpenAIChat, `{"max_completion_tokens":"9"}`, "max_completion_tokens must be a number"},
		{OpenAIResponses, `{"input":42}`, "input must be a string or an array"},
		{OpenAIResponses, `{"store":"no"}`, "store must be a boolean"},
		{Gemini, `{"contents":{}}`, "contents must be an array"},
		{Gemini, `{"generationConfig":[]}`, "generationConfig must be an object"},
	} {
		_, err := PeekRequest(tc.api, []byte(tc.body))
		require.ErrorIs(t, err, ErrMalformed, tc.body)
		require.Contains(t, err.Error(), tc.want, tc.body)
	}
	// A field of another API is not checked.
	_, err := PeekRequest(Gemini, []byte(`{"messages":"whatever"}`))
	require.NoError(t, err)
}
