package gemini

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestGeminiUsage: input is promptTokenCount (and toolUsePromptTokenCount)
// without cachedContentTokenCount, the cache read; output counts
// candidates and thoughts; a stream reports it in the chunk that carries
// usageMetadata.
func TestGeminiUsage(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	const usage = `{"promptTokenCount":3000,"cachedContentTokenCount":2048,"toolUsePromptTokenCount":10,"candidatesTokenCount":40,"thoughtsTokenCount":160,"totalTokenCount":3210}`
	want := conv.Usage{InputTokens: 962, OutputTokens: 200, CacheReadTokens: 2048}
	r, err := c.ParseReply([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":` + usage + `}`))
	require.NoError(t, err)
	require.Equal(t, want, r.Usage)

	_, acc := apitest.DecodeSSE(t, c, []byte(
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"h"}]}}],"usageMetadata":{"promptTokenCount":3000,"totalTokenCount":3000}}`+"\r\n\r\n"+
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"i"}]},"finishReason":"STOP"}],"usageMetadata":`+usage+`}`+"\r\n\r\n"))
	require.Equal(t, want, acc.Usage)
}
