package openaichat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// Chat has its own RequestFingerprint path (the first turns only); it must
// agree with ParseRequest, cached prefix or not.
func TestRequestFingerprint(t *testing.T) {
	agent := workload.ChatAgent(workload.AgentTurns, false)
	require.NotEmpty(t, apitest.CheckFingerprint(t, Descriptor, agent))
	require.NotEmpty(t, apitest.CheckFingerprint(t, Descriptor, apitest.Fixture(t, Descriptor, "request.json")))
	// A malformed message after the first user turn: ParseRequest fails, so
	// there is no fingerprint, cached prefix or not.
	bad := strings.Replace(string(agent), `"role":"tool"`, `"role":7`, 1)
	require.NotEqual(t, string(agent), bad)
	require.Empty(t, apitest.CheckFingerprint(t, Descriptor, []byte(bad)))
	bad = strings.Replace(string(agent), `"tool_call_id":"`, `"tool_call_id":{"x":"`, 1)
	require.Empty(t, apitest.CheckFingerprint(t, Descriptor, []byte(bad)))
	for _, s := range []string{
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":5}]}`,
		`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`,
		`{"messages":[{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"q"}]}]}`,
		`{"messages":[{"role":"user","content":"q"},{"role":"user","content":"r"}],"tools":[{"type":"function"}]}`,
		`{"messages":[]}`, `{"messages":[{"role":"user","content":"q"}],"model":1}`, `{}`, `[]`, `{`,
	} {
		apitest.CheckFingerprint(t, Descriptor, []byte(s))
	}
}
