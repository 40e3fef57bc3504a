package proxy_test

// Governance of Codex CLI's apply_patch, a Responses custom (free-form) tool:
// the file paths are parsed from the patch, a patch that touches a file
// outside the intent's scope never reaches the agent, and the model is told
// why in a custom_tool_call_output.

import (
	"testing"

	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
)

const (
	codexPatchOut = "*** Begin Patch\n*** Update File: src/auth/login.go\n@@\n-a\n+b\n*** Add File: ../outside.txt\n+pwned\n*** End Patch\n"
	codexPatchIn  = "*** Begin Patch\n*** Update File: src/auth/login.go\n@@\n-a\n+b\n*** End Patch\n"
)

func TestIntentsCodexApplyPatch(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[streamed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := intentWorkspace(t, intentPolicy("INT-001"))
			h := newIntentHarness(t, dir)
			h.mock.Script(
				mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "p1", Name: "apply_patch", Args: codexPatchOut, Custom: true}}},
				mock.Reply{ID: "r2", Text: "Keeping to src.", ToolCalls: []mock.ToolCall{{ID: "p2", Name: "apply_patch", Args: codexPatchIn, Custom: true}}},
			)
			c := e2eOpenAIClient(h.URL, ooption.WithHeader("X-Session-Id", "codex-"+name))
			p := ecParams()
			var out []responses.ResponseOutputItemUnion
			if streamed {
				s := ecRunStream(t, e2eCtx(t), c, p)
				out = s.final.Output
			} else {
				r, err := c.Responses.New(e2eCtx(t), p)
				require.NoError(t, err)
				out = r.Output
			}

			// The agent gets only the in-scope patch.
			var custom []responses.ResponseCustomToolCall
			for _, it := range out {
				if it.Type == "custom_tool_call" {
					custom = append(custom, it.AsCustomToolCall())
				}
			}
			require.Len(t, custom, 1)
			require.Equal(t, "p2", custom[0].CallID)
			require.Equal(t, codexPatchIn, custom[0].Input)

			// The model was told why, in a custom_tool_call_output.
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			var refusal string
			for _, it := range gjson.GetBytes(reqs[1].Body, "input").Array() {
				if it.Get("type").Str == "custom_tool_call_output" && it.Get("call_id").Str == "p1" {
					refusal = it.Get("output").Str
				}
			}
			require.Contains(t, refusal, `"../outside.txt" is outside the workspace`)
			require.Contains(t, gjson.GetBytes(reqs[0].Body, "tools").Raw, intents.IntentTool)

			sess := intentSession(t, h, "codex-"+name)
			require.Equal(t, []string{"refused scope apply_patch p1 INT-001", "allowed checks_passed apply_patch p2 INT-001"}, auditTrail(intentsOf(t, sess).Audit))
		})
	}
}
