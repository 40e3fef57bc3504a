package rewrite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func TestViewCacheGivesTheUncachedView(t *testing.T) {
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			vc := rewrite.NewViewCache(1 << 20)
			c := api.NewCodec(vc)
			body := apitest.Fixture(t, api, "request.json")
			want, err := apitest.ParseUncached(api, body)
			require.NoError(t, err)
			first, err := c.ParseRequest(body)
			require.NoError(t, err)
			apitest.RequireSameView(t, want, first)
			h0, m0 := vc.Stats()
			require.Zero(t, h0, "a fresh cache has nothing to hit")
			require.NotZero(t, m0)
			second, err := c.ParseRequest(body)
			require.NoError(t, err)
			apitest.RequireSameView(t, want, second)
			h, m := vc.Stats()
			require.Equal(t, m0, m, "every element of a resent body is a hit")
			require.Equal(t, m0, h)
			// The views handed out are copies: changing one changes no
			// later view.
			for i := range second.Messages {
				for j := range second.Messages[i].Blocks {
					second.Messages[i].Blocks[j].Text = "scribbled"
				}
			}
			third, err := c.ParseRequest(body)
			require.NoError(t, err)
			apitest.RequireSameView(t, want, third)
		})
	}
}

// acceptingAPIs returns the APIs whose codec parses body (uncached) into a
// view that ok accepts: the tests below write their bodies in one wire
// shape and run on every API that speaks it. At least one must.
func acceptingAPIs(t *testing.T, body []byte, ok func(*rewrite.Descriptor, []byte) bool) []*rewrite.Descriptor {
	t.Helper()
	var out []*rewrite.Descriptor
	for _, api := range apis.All() {
		if ok(api, body) {
			out = append(out, api)
		}
	}
	require.NotEmpty(t, out, "no API parses the test's body")
	return out
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
	speaks := func(api *rewrite.Descriptor, b []byte) bool {
		v, err := apitest.ParseUncached(api, b)
		return err == nil && len(v.Messages) == 3 && v.Messages[2].Blocks[0].Text == "message 2 "+strings.Repeat("x", 100)
	}
	for _, api := range acceptingAPIs(t, body(0, 3), speaks) {
		t.Run(api.Name, func(t *testing.T) {
			// Room for a few entries per shard generation: old elements
			// are evicted, and what is looked up again stays.
			vc := rewrite.NewViewCache(2 * rewrite.ViewCacheShards * 4 * (rewrite.EntryOverhead + 160))
			c := api.NewCodec(vc)
			_, err := c.ParseRequest(body(0, 2000))
			require.NoError(t, err)
			held, ok := vc.Held()
			require.True(t, ok, "no shard holds more than the limit")
			require.Less(t, held, 2000, "the cache is bounded")
			require.Greater(t, held, 0)
			_, misses := vc.Stats()
			_, err = c.ParseRequest(body(1990, 2000))
			require.NoError(t, err)
			_, m := vc.Stats()
			require.Equal(t, misses, m, "the newest elements are still cached")

			// Budget 0: nothing is cached and views carry no digest.
			vc = rewrite.NewViewCache(0)
			c = api.NewCodec(vc)
			for range 2 {
				req, err := c.ParseRequest(body(0, 3))
				require.NoError(t, err)
				for _, m := range req.Messages {
					require.Nil(t, m.Digest)
				}
			}
			h, m := vc.Stats()
			require.Zero(t, h+m)

			// Turning it off drops what it holds.
			vc = rewrite.NewViewCache(1 << 20)
			c = api.NewCodec(vc)
			_, err = c.ParseRequest(body(0, 3))
			require.NoError(t, err)
			vc.SetBudget(0)
			require.True(t, vc.CurEmpty())
		})
	}
}

// A long conversation resolves its results through the map the resolver
// switches to after RecentCalls calls; an id reused later names the later
// call, as the map of an uncached parse does.
func TestViewCacheManyCalls(t *testing.T) {
	n := rewrite.RecentCalls
	var els []string
	els = append(els, `{"role":"user","content":"go"}`)
	for i := range 3 * n {
		id := fmt.Sprintf("t%d", i%(2*n)) // ids come back
		els = append(els,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"tool%d","input":{}}]}`, id, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"r"},{"type":"tool_result","tool_use_id":"t0","content":"r"}]}`, id))
	}
	body := []byte(`{"model":"m","messages":[` + strings.Join(els, ",") + `]}`)
	speaks := func(api *rewrite.Descriptor, b []byte) bool {
		v, err := apitest.ParseUncached(api, b)
		if err != nil || len(v.Messages) != len(els) {
			return false
		}
		last := v.Messages[len(v.Messages)-1].Blocks
		return len(last) == 2 && last[0].ToolCallID != ""
	}
	for _, api := range acceptingAPIs(t, body, speaks) {
		t.Run(api.Name, func(t *testing.T) {
			c := api.NewCodec(rewrite.NewViewCache(1 << 20))
			want, err := apitest.ParseUncached(api, body)
			require.NoError(t, err)
			for range 2 {
				got, err := c.ParseRequest(body)
				require.NoError(t, err)
				apitest.RequireSameView(t, want, got)
			}
			last := want.Messages[len(want.Messages)-1].Blocks
			require.Equal(t, fmt.Sprintf("tool%d", 3*n-1), last[0].ToolName)
			require.Equal(t, fmt.Sprintf("tool%d", 2*n), last[1].ToolName, "t0 was last called in round 2*RecentCalls")
		})
	}
}
