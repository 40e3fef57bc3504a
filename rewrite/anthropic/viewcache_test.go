package anthropic

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// The same tool-result element follows calls with different names in two
// conversations: each view names the result after its own conversation's
// call, and each digest (so each anchor) matches an uncached parse.
func TestViewCacheResolvesToolNamesPerConversation(t *testing.T) {
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"42"}]}`
	conv := func(name string) []byte {
		return []byte(`{"model":"m","messages":[{"role":"user","content":"go"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"` + name + `","input":{}}]},` + result + `]}`)
	}
	vc := rewrite.NewViewCache(1 << 20)
	c := Descriptor.NewCodec(vc)
	for _, name := range []string{"Read", "Grep", "Read", ""} {
		body := conv(name)
		want, err := apitest.ParseUncached(Descriptor, body)
		require.NoError(t, err)
		got, err := c.ParseRequest(body)
		require.NoError(t, err)
		apitest.RequireSameView(t, want, got)
		require.Equal(t, name, got.Messages[2].Blocks[0].ToolName)
	}
	hits, _ := vc.Stats()
	require.NotZero(t, hits, "the result element was served from the cache")
}
