package openaichat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// A name on the wire (Chat tool message) wins over the call's name, cached
// or not.
func TestViewCacheResolvesToolNamesPerConversation(t *testing.T) {
	c := Descriptor.NewCodec(rewrite.NewViewCache(1 << 20))
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","name":"Wire","content":"x"}]}`)
	want, err := apitest.ParseUncached(Descriptor, body)
	require.NoError(t, err)
	for range 2 {
		got, err := c.ParseRequest(body)
		require.NoError(t, err)
		apitest.RequireSameView(t, want, got)
		require.Equal(t, "Wire", got.Messages[2].Blocks[0].ToolName)
	}
}
