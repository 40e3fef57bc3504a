package rewrite

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// wantFingerprint is what RequestFingerprint must return: ParseRequest's
// fingerprint, "" when ParseRequest fails.
func wantFingerprint(c Codec, body []byte) string {
	v, err := c.ParseRequest(body)
	if err != nil {
		return ""
	}
	return v.Fingerprint
}

// checkFingerprint compares RequestFingerprint with ParseRequest, with the
// view cache cold, warm and off.
func checkFingerprint(t testing.TB, c Codec, body []byte) string {
	t.Helper()
	var fp string
	for _, budget := range []int64{DefaultViewCacheBytes, 0} {
		c := rebind(c, NewViewCache(budget))
		got := RequestFingerprint(c, body) // cold
		want := wantFingerprint(c, body)   // warms the cache
		require.Equal(t, want, got, "cold cache, budget %d: %q", budget, body)
		require.Equal(t, want, RequestFingerprint(c, body), "warm cache, budget %d: %q", budget, body)
		fp = want
	}
	return fp
}

func TestRequestFingerprint(t *testing.T) {
	chat := codecFor(OpenAIChat)
	agent := workload.ChatAgent(workload.AgentTurns, false)
	require.NotEmpty(t, checkFingerprint(t, chat, agent))
	require.NotEmpty(t, checkFingerprint(t, chat, fixture(t, OpenAIChat, "request.json")))
	// A malformed message after the first user turn: ParseRequest fails, so
	// there is no fingerprint, cached prefix or not.
	bad := strings.Replace(string(agent), `"role":"tool"`, `"role":7`, 1)
	require.NotEqual(t, string(agent), bad)
	require.Empty(t, checkFingerprint(t, chat, []byte(bad)))
	bad = strings.Replace(string(agent), `"tool_call_id":"`, `"tool_call_id":{"x":"`, 1)
	require.Empty(t, checkFingerprint(t, chat, []byte(bad)))
	for _, s := range []string{
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":5}]}`,
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`,
		`{"messages":[{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"q"}]}]}`,
		`{"messages":[{"role":"user","content":"q"},{"role":"user","content":"r"}],"tools":[{"type":"function"}]}`,
		`{"messages":[]}`, `{"messages":[{"role":"user","content":"q"}],"model":1}`, `{}`, `[]`, `{`,
	} {
		checkFingerprint(t, chat, []byte(s))
	}
	// The other codecs go through ParseRequest.
	for _, api := range allAPIs {
		checkFingerprint(t, codecFor(api), fixture(t, api, "request.json"))
	}
}

func FuzzRequestFingerprint(f *testing.F) {
	seedRequests(f)
	f.Add(uint8(1), workload.ChatAgent(3, false), "", int64(0))
	f.Fuzz(func(t *testing.T, api uint8, body []byte, _ string, _ int64) {
		checkFingerprint(t, codecFor(allAPIs[int(api)%len(allAPIs)]), body)
	})
}
