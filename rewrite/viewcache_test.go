package rewrite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// parseUncached parses body with the view cache out of the way.
func parseUncached(t testing.TB, c Codec, body []byte) (*conv.Request, error) {
	t.Helper()
	return rebind(c, nil).ParseRequest(body)
}

// withViewCache runs fn with a fresh cache of the given budget, which the
// codecs codecFor returns meanwhile parse through (rebind binds others).
func withViewCache(t *testing.T, budget int64, fn func(c *ViewCache)) {
	t.Helper()
	saved := testViews
	testViews = NewViewCache(budget)
	defer func() { testViews = saved }()
	fn(testViews)
}

// requireSameView checks that a view served from the cache is the view a
// fresh parse gives, digests included (they must be the digests of the
// messages as returned), and that both give the same anchors.
func requireSameView(t testing.TB, want, got *conv.Request) {
	t.Helper()
	require.Equal(t, conv.Anchors(stripAll(want.Messages)), conv.Anchors(got.Messages), "anchors from cached digests")
	for i := range got.Messages {
		if d := got.Messages[i].Digest; d != nil {
			m := got.Messages[i]
			m.Digest = nil
			require.Equal(t, conv.MessageDigest(&m), d, "digest of message %d", i)
		}
	}
	w, g := *want, *got
	w.Messages, g.Messages = stripAll(want.Messages), stripAll(got.Messages)
	require.Equal(t, w, g)
}

func stripAll(msgs []conv.Message) []conv.Message {
	out := make([]conv.Message, len(msgs))
	for i, m := range msgs {
		m.Digest = nil
		out[i] = m
	}
	return out
}

func TestViewCacheGivesTheUncachedView(t *testing.T) {
	for _, api := range allAPIs {
		t.Run(api.Name, func(t *testing.T) {
			withViewCache(t, 1<<20, func(vc *ViewCache) {
				c := codecFor(api)
				body := fixture(t, api, "request.json")
				want, err := parseUncached(t, c, body)
				require.NoError(t, err)
				first, err := c.ParseRequest(body)
				require.NoError(t, err)
				requireSameView(t, want, first)
				h0, m0 := vc.hits.Load(), vc.misses.Load()
				require.Zero(t, h0, "a fresh cache has nothing to hit")
				require.NotZero(t, m0)
				second, err := c.ParseRequest(body)
				require.NoError(t, err)
				requireSameView(t, want, second)
				require.Equal(t, m0, vc.misses.Load(), "every element of a resent body is a hit")
				require.Equal(t, m0, vc.hits.Load())
				// The views handed out are copies: changing one changes no
				// later view.
				for i := range second.Messages {
					for j := range second.Messages[i].Blocks {
						second.Messages[i].Blocks[j].Text = "scribbled"
					}
				}
				third, err := c.ParseRequest(body)
				require.NoError(t, err)
				requireSameView(t, want, third)
			})
		})
	}
}

// The same tool-result element follows calls with different names in two
// conversations: each view names the result after its own conversation's
// call, and each digest (so each anchor) matches an uncached parse.
func TestViewCacheResolvesToolNamesPerConversation(t *testing.T) {
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"42"}]}`
	conv := func(name string) []byte {
		return []byte(`{"model":"m","messages":[{"role":"user","content":"go"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"` + name + `","input":{}}]},` + result + `]}`)
	}
	withViewCache(t, 1<<20, func(vc *ViewCache) {
		c := codecFor(Anthropic)
		for _, name := range []string{"Read", "Grep", "Read", ""} {
			body := conv(name)
			want, err := parseUncached(t, c, body)
			require.NoError(t, err)
			got, err := c.ParseRequest(body)
			require.NoError(t, err)
			requireSameView(t, want, got)
			require.Equal(t, name, got.Messages[2].Blocks[0].ToolName)
		}
		require.NotZero(t, vc.hits.Load(), "the result element was served from the cache")
	})
	// A name on the wire (Chat tool message) wins over the call's name,
	// cached or not.
	withViewCache(t, 1<<20, func(*ViewCache) {
		c := codecFor(OpenAIChat)
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"go"},` +
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","name":"Wire","content":"x"}]}`)
		want, err := parseUncached(t, c, body)
		require.NoError(t, err)
		for range 2 {
			got, err := c.ParseRequest(body)
			require.NoError(t, err)
			requireSameView(t, want, got)
			require.Equal(t, "Wire", got.Messages[2].Blocks[0].ToolName)
		}
	})
}

func TestViewCacheBudget(t *testing.T) {
	msg := func(i int) string {
		return fmt.Sprintf(`{"role":"user","content":"message %d %s"}`, i, strings.Repeat("x", 100))
	}
	body := func(from, to int) []byte {
		var els []string
		for i := from; i < to; i++ {
			els = append(els, msg(i))
		}
		return []byte(`{"model":"m","messages":[` + strings.Join(els, ",") + `]}`)
	}
	c := codecFor(Anthropic)
	// Room for a few entries per shard generation: old elements are
	// evicted, and what is looked up again stays.
	withViewCache(t, 2*viewCacheShards*4*(entryOverhead+160), func(vc *ViewCache) {
		c := rebind(c, vc)
		_, err := c.ParseRequest(body(0, 2000))
		require.NoError(t, err)
		held := 0
		for i := range vc.shards {
			held += len(vc.shards[i].cur) + len(vc.shards[i].old)
			require.LessOrEqual(t, vc.shards[i].curBytes, vc.limit.Load())
		}
		require.Less(t, held, 2000, "the cache is bounded")
		require.Greater(t, held, 0)
		misses := vc.misses.Load()
		_, err = c.ParseRequest(body(1990, 2000))
		require.NoError(t, err)
		require.Equal(t, misses, vc.misses.Load(), "the newest elements are still cached")
	})
	// Budget 0: nothing is cached and views carry no digest.
	withViewCache(t, 0, func(vc *ViewCache) {
		c := rebind(c, vc)
		for range 2 {
			req, err := c.ParseRequest(body(0, 3))
			require.NoError(t, err)
			for _, m := range req.Messages {
				require.Nil(t, m.Digest)
			}
		}
		require.Zero(t, vc.hits.Load()+vc.misses.Load())
	})
	// Turning it off drops what it holds.
	withViewCache(t, 1<<20, func(vc *ViewCache) {
		c := rebind(c, vc)
		_, err := c.ParseRequest(body(0, 3))
		require.NoError(t, err)
		vc.setBudget(0)
		for i := range vc.shards {
			require.Empty(t, vc.shards[i].cur)
		}
	})
}

// A long conversation resolves its results through the map the resolver
// switches to after recentCalls calls; an id reused later names the later
// call, as the map of an uncached parse does.
func TestViewCacheManyCalls(t *testing.T) {
	var els []string
	els = append(els, `{"role":"user","content":"go"}`)
	for i := range 3 * recentCalls {
		id := fmt.Sprintf("t%d", i%(2*recentCalls)) // ids come back
		els = append(els,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"tool%d","input":{}}]}`, id, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"r"},{"type":"tool_result","tool_use_id":"t0","content":"r"}]}`, id))
	}
	body := []byte(`{"model":"m","messages":[` + strings.Join(els, ",") + `]}`)
	c := codecFor(Anthropic)
	withViewCache(t, 1<<20, func(vc *ViewCache) {
		c := rebind(c, vc)
		want, err := parseUncached(t, c, body)
		require.NoError(t, err)
		for range 2 {
			got, err := c.ParseRequest(body)
			require.NoError(t, err)
			requireSameView(t, want, got)
		}
		last := want.Messages[len(want.Messages)-1].Blocks
		require.Equal(t, fmt.Sprintf("tool%d", 3*recentCalls-1), last[0].ToolName)
		require.Equal(t, fmt.Sprintf("tool%d", 2*recentCalls), last[1].ToolName, "t0 was last called in round 2*recentCalls")
	})
}
