package responses

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestResponsesUsage: input is input_tokens without
// input_tokens_details.cached_tokens, the cache read; the stream's usage
// comes with response.completed.
func TestResponsesUsage(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	const usage = `{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4608},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":200},"total_tokens":5300}`
	want := conv.Usage{InputTokens: 392, OutputTokens: 300, CacheReadTokens: 4608}
	r, err := c.ParseReply([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[],"usage":` + usage + `}`))
	require.NoError(t, err)
	require.Equal(t, want, r.Usage)

	_, acc := apitest.DecodeSSE(t, c, []byte(
		"event: response.created\n"+`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","model":"gpt-5","status":"in_progress","output":[],"usage":null}}`+"\n\n"+
			"event: response.completed\n"+`data: {"type":"response.completed","sequence_number":1,"response":{"id":"resp_1","model":"gpt-5","status":"completed","output":[],"usage":`+usage+`}}`+"\n\n"))
	require.Equal(t, want, acc.Usage)
}
