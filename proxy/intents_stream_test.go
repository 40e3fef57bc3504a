package proxy_test

// The intent-governance scenarios of intents_test.go with streamed replies,
// driven by the official SDKs: refusals and selections are answered inside
// the stream, the follow-ups are streamed into the same reply, and the SDK
// accumulates one well-formed reply holding only the calls the agent may
// run.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
)

// TestIntentsGatekeeperThenSelectionStreaming is scenario 1 streamed on
// every API.
func TestIntentsGatekeeperThenSelectionStreaming(t *testing.T) {
	for _, c := range intentCases("stream") {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runIntentGatekeeperFlow(t, c)
		})
	}
}

// TestIntentsScopeRefusalBesideAllowedCallStreaming is scenario 2 streamed
// on every API.
func TestIntentsScopeRefusalBesideAllowedCallStreaming(t *testing.T) {
	for _, c := range intentCases("stream") {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runIntentScopeFlow(t, c)
		})
	}
}

// TestIntentsStreamMixedTurns alternates streamed and non-streamed SDK
// turns in one governed session per API: a refusal recorded on a streamed
// turn is replayed on a non-streamed one and the other way round, and every
// upstream request extends the previous one byte for byte.
func TestIntentsStreamMixedTurns(t *testing.T) {
	for _, c := range intentCases("stream") {
		t.Run(c.api.name, func(t *testing.T) {
			t.Parallel()
			dir := intentWorkspace(t, intentPolicy(""))
			h := newIntentHarness(t, dir)
			session := "mixed-intents-" + c.api.name
			a := c.agent(t, h, session).(*sdkIntentAgent)
			h.mock.Script(
				// Turn 1 (streamed): a refused Write beside an allowed Read.
				mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
					{ID: "w1", Name: "Write", Args: writeSrcArgs},
					{ID: "r1", Name: "Read", Args: readSrcArgs},
				}},
				// Turn 2 (unary): the selection alone, then a Write beside a
				// refused out-of-scope one.
				mock.Reply{ID: "m2", ToolCalls: []mock.ToolCall{{ID: "s1", Name: intents.IntentTool, Args: `{"intent_id":"INT-001"}`}}},
				mock.Reply{ID: "m3", ToolCalls: []mock.ToolCall{
					{ID: "w2", Name: "Write", Args: writeDocsArgs},
					{ID: "w3", Name: "Write", Args: writeSrcArgs},
				}},
				// Turn 3 (streamed): the end.
				mock.Reply{ID: "m4", Text: "Done."},
			)
			a.user("fix it")
			a.stream = true
			reply := a.send(t)
			requireCalls(t, []mock.ToolCall{{ID: "r1", Name: "Read", Args: readSrcArgs}}, reply.calls)
			a.toolResult("r1", "Read")
			a.stream = false
			reply = a.send(t)
			requireCalls(t, []mock.ToolCall{{ID: "w3", Name: "Write", Args: writeSrcArgs}}, reply.calls)
			a.toolResult("w3", "Write")
			a.stream = true
			reply = a.send(t)
			require.Equal(t, "Done.", reply.text)
			require.Empty(t, reply.calls)

			reqs := h.mock.Requests()
			require.Len(t, reqs, 4, "the selection alone was followed up")
			requireAllAppendOnly(t, c.api, reqs)
			last := reqs[3].Body
			requireRefusal(t, c.api.name, last, "w1", intents.GatekeeperMessage)
			requireRefusal(t, c.api.name, last, "w2", `"docs/x.md" is outside the scope of intent INT-001`)
			require.Contains(t, requireResult(t, c.api.name, last, "s1").content, `<intent_context intent_id="INT-001">`)
			require.Equal(t, []string{
				"refused gatekeeper Write w1 ",
				"allowed always_allowed Read r1 ",
				"selected select_intent select_active_intent s1 INT-001",
				"refused scope Write w2 INT-001",
				"allowed checks_passed Write w3 INT-001",
			}, auditTrail(intentsOf(t, intentSession(t, h, session)).Audit))
		})
	}
}

// TestIntentsReplayWithReorderedArguments: google.golang.org/genai holds a
// function call's arguments in a map, so the agent sends them back with
// their keys sorted, not in the order the model wrote them. The refused
// call beside the agent's allowed one must still be put back into the
// model's history on the next request.
func TestIntentsReplayWithReorderedArguments(t *testing.T) {
	for _, c := range intentCasesOf("gemini", "unary", "stream") {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			dir := intentWorkspace(t, intentPolicy("INT-001"))
			h := newIntentHarness(t, dir)
			session := "reordered-" + c.mode
			a := c.agent(t, h, session)
			// The model writes file_path before content; genai sorts them.
			docs := `{"file_path":"docs/x.md","content":"# X\n"}`
			src := `{"file_path":"src/a.go","content":"package a\n"}`
			h.mock.Script(
				mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
					{ID: "w1", Name: "Write", Args: docs},
					{ID: "w2", Name: "Write", Args: src},
				}},
				mock.Reply{ID: "m2", Text: "Written."},
			)
			a.user("go")
			reply := a.send(t)
			requireCalls(t, []mock.ToolCall{{ID: "w2", Name: "Write", Args: src}}, reply.calls)
			a.toolResult("w2", "Write")
			reply = a.send(t)
			require.Equal(t, "Written.", reply.text)

			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			requireAppendOnly(t, c.api, reqs[0].Body, reqs[1].Body)
			requireRefusal(t, c.api.name, reqs[1].Body, "w1", `"docs/x.md" is outside the scope of intent INT-001`)
			require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`), "the turn's ledger entry matched")
		})
	}
}
