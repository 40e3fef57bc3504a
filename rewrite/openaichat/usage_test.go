package openaichat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestChatUsage: input is prompt_tokens without the cached part, which is
// the cache read; output is completion_tokens (reasoning included); the
// stream's usage comes in its final chunk (stream_options.include_usage).
func TestChatUsage(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	const usage = `{"prompt_tokens":2100,"completion_tokens":80,"total_tokens":2180,"prompt_tokens_details":{"cached_tokens":2048},"completion_tokens_details":{"reasoning_tokens":64}}`
	want := conv.Usage{InputTokens: 52, OutputTokens: 80, CacheReadTokens: 2048}
	r, err := c.ParseReply([]byte(`{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],"usage":` + usage + `}`))
	require.NoError(t, err)
	require.Equal(t, want, r.Usage)

	_, acc := apitest.DecodeSSE(t, c, []byte(
		`data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`+"\n\n"+
			`data: {"choices":[],"usage":`+usage+`}`+"\n\n"+
			"data: [DONE]\n\n"))
	require.Equal(t, want, acc.Usage)

	r, err = c.ParseReply([]byte(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1}}`))
	require.NoError(t, err)
	require.Equal(t, conv.Usage{InputTokens: 9, OutputTokens: 1}, r.Usage, "no details: nothing cached")
}
