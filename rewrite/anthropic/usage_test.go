package anthropic

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestAnthropicUsage: input_tokens is already the uncached input; the
// cache counts come from cache_read_input_tokens and
// cache_creation_input_tokens, in a JSON reply and in the stream's
// message_start and message_delta (which may repeat them cumulatively).
func TestAnthropicUsage(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	r, err := c.ParseReply([]byte(`{"content":[],"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":50,"cache_creation":{"ephemeral_5m_input_tokens":300}}}`))
	require.NoError(t, err)
	require.Equal(t, conv.Usage{InputTokens: 12, OutputTokens: 50, CacheReadTokens: 4000, CacheWriteTokens: 300}, r.Usage)

	_, acc := apitest.DecodeSSE(t, c, []byte("event: message_start\n"+
		`data: {"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":1}}}`+"\n\n"+
		"event: message_delta\n"+
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":50}}`+"\n\n"+
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	require.Equal(t, conv.Usage{InputTokens: 12, OutputTokens: 50, CacheReadTokens: 4000, CacheWriteTokens: 300}, acc.Usage)

	// A message_delta with the output count only keeps the start's counts.
	evs, err := c.NewStreamDecoder().Decode(rewrite.Event{Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`)})
	require.NoError(t, err)
	require.Equal(t, &conv.Usage{OutputTokens: 7}, evs[0].Usage)
}
