package proxy_test

// Truncation recovery end to end (README "Truncation recovery"): a reply cut
// by the output limit is continued upstream and the agent receives one
// complete reply. Each scenario runs per API; this file runs them
// non-streaming (raw HTTP, which also shows the X-Shepherd-Recovery-Attempts
// header, and the official SDKs), recovery_stream_test.go streams them
// through the official SDKs.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/state"
)

const (
	recPangram  = "The quick brown fox jumps over the lazy dog."
	recPartial  = "The quick brown fox jumps over the"
	recRest     = " lazy dog."
	recInstruct = recovery.DefaultRecoveryInstruction
)

// recHarness starts a harness with the default configuration (recovery on,
// two attempts, a 1200-token floor) and mods.
func recHarness(t *testing.T, mods ...func(*config.Config)) *harness {
	t.Helper()
	return newHarness(t, harnessOptions{Config: func(c *config.Config) {
		c.Recovery.Enabled = true
		for _, m := range mods {
			m(c)
		}
	}})
}

// recSession is a session id unique to the test and case.
func recSession(t *testing.T, c recCase) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(t.Name() + "-" + c.mode)
}

// requireUpstream asserts the upstream requests are n, all in the case's
// shape (streamed or not).
func requireUpstream(t *testing.T, h *harness, c recCase, n int) []mock.Recorded {
	t.Helper()
	reqs := h.mock.Requests()
	require.Len(t, reqs, n, "upstream requests")
	for i, r := range reqs {
		require.Equal(t, c.mode == "stream", r.Stream, "upstream request %d", i+1)
	}
	require.Zero(t, h.mock.Pending(), "every scripted reply was used")
	return reqs
}

// requireRecoveries asserts shepherd_recoveries_total of the case's route.
func requireRecoveries(t *testing.T, h *harness, c recCase, recovered, exhausted, failed, attempts, truncations float64) {
	t.Helper()
	route := `route="` + c.route() + `"`
	require.Equal(t, recovered, metricSum(t, h, "shepherd_recoveries_total", route, `result="recovered"`), "recovered")
	require.Equal(t, exhausted, metricSum(t, h, "shepherd_recoveries_total", route, `result="exhausted"`), "exhausted")
	require.Equal(t, failed, metricSum(t, h, "shepherd_recoveries_total", route, `result="failed"`), "failed")
	require.Equal(t, attempts, metricSum(t, h, "shepherd_recovery_attempts_total", route), "continuations")
	require.Equal(t, truncations, metricSum(t, h, "shepherd_truncations_total", route, `stop="max_tokens"`), "truncations")
}

// requireFinished asserts a reply the agent got ended on its own with text.
func requireFinished(t *testing.T, c recCase, r recReply, text string) {
	t.Helper()
	require.Equal(t, text, r.text, "events: %v", r.events)
	if r.textBlocks >= 0 {
		require.Equal(t, 1, r.textBlocks, "one text block: the continuation runs on in the cut one")
	}
	require.Empty(t, r.calls)
	require.Equal(t, c.api.endStop, r.stop, "the stop reason is the last attempt's")
	require.Empty(t, r.incomplete)
}

// ---- the scenarios (run per API and mode) ----

// recOneTruncation: one cut reply, then the rest. The agent gets one reply
// with the whole text, the normal stop and summed usage; the continuation
// request extends the first by the partial reply and the instruction.
func recOneTruncation(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: recPartial, Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 10}},
		mock.Reply{ID: "r2", Text: recRest, Usage: mock.Usage{Input: 130, Output: 5}},
	)
	a.user("Write the pangram.")
	r := a.send(t)
	requireFinished(t, c, r, recPangram)
	require.EqualValues(t, 15, r.output, "output tokens are summed over the attempts")
	if c.mode == "raw" {
		require.Equal(t, "1", r.attempts, "X-Shepherd-Recovery-Attempts")
	}
	reqs := requireUpstream(t, h, c, 2)
	requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, recPartial, recInstruct)
	require.Equal(t, gjson.GetBytes(reqs[0].Body, c.api.limit).Raw, gjson.GetBytes(reqs[1].Body, c.api.limit).Raw,
		"a text continuation keeps the output limit")
	requireRecoveries(t, h, c, 1, 0, 0, 1, 1)
}

// recTwoTruncations: cut twice, then the rest: three requests, each
// continuation extending the previous one, and one reply.
func recTwoTruncations(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: "One, ", Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 10}},
		mock.Reply{ID: "r2", Text: "two, ", Stop: "max_tokens", Usage: mock.Usage{Input: 130, Output: 5}},
		mock.Reply{ID: "r3", Text: "three.", Usage: mock.Usage{Input: 160, Output: 7}},
	)
	a.user("Count to three.")
	r := a.send(t)
	requireFinished(t, c, r, "One, two, three.")
	require.EqualValues(t, 22, r.output, "output tokens are summed over the attempts")
	if c.mode == "raw" {
		require.Equal(t, "2", r.attempts, "X-Shepherd-Recovery-Attempts")
	}
	reqs := requireUpstream(t, h, c, 3)
	requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, "One, ", recInstruct)
	requireContinuation(t, c.api, reqs[1].Body, reqs[2].Body, "two, ", recInstruct)
	requireRecoveries(t, h, c, 1, 0, 0, 2, 2)

	// The next turn sees the whole truncated turn as it happened.
	a.user("Thanks.")
	h.mock.Script(mock.Reply{ID: "r4", Text: "You're welcome."})
	r = a.send(t)
	requireFinished(t, c, r, "You're welcome.")
	reqs = requireUpstream(t, h, c, 4)
	requireAppendOnly(t, c.api.api, reqs[2].Body, reqs[3].Body)
	added := c.api.history(reqs[3].Body)[len(c.api.history(reqs[2].Body)):]
	require.Equal(t, "three.Thanks.", c.api.itemsText(added), "the continuation, then the agent's message")
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
}

// recExhausted: still cut after the last attempt. The agent gets all the
// text so far with the real stop reason; the turn counts as exhausted.
func recExhausted(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: "Part one, ", Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 10}},
		mock.Reply{ID: "r2", Text: "part two, ", Stop: "max_tokens", Usage: mock.Usage{Input: 130, Output: 10}},
		mock.Reply{ID: "r3", Text: "part three", Stop: "max_tokens", Usage: mock.Usage{Input: 160, Output: 10}},
	)
	a.user("Write three parts.")
	r := a.send(t)
	require.Equal(t, "Part one, part two, part three", r.text, "events: %v", r.events)
	if r.textBlocks >= 0 {
		require.Equal(t, 1, r.textBlocks)
	}
	require.Equal(t, c.api.cutStop, r.stop, "the real stop reason")
	if detail := c.api.api.d.Stops().CutDetail; detail != "" {
		require.Equal(t, detail, r.incomplete)
	}
	require.EqualValues(t, 30, r.output)
	if c.mode == "raw" {
		require.Equal(t, "2", r.attempts, "X-Shepherd-Recovery-Attempts")
	}
	reqs := requireUpstream(t, h, c, 3)
	requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, "Part one, ", recInstruct)
	requireContinuation(t, c.api, reqs[1].Body, reqs[2].Body, "part two, ", recInstruct)
	requireRecoveries(t, h, c, 0, 1, 0, 2, 3)

	// The next turn still extends the model's view.
	a.user("Go on.")
	h.mock.Script(mock.Reply{ID: "r4", Text: "Done."})
	r = a.send(t)
	requireFinished(t, c, r, "Done.")
	reqs = requireUpstream(t, h, c, 4)
	requireAppendOnly(t, c.api.api, reqs[2].Body, reqs[3].Body)
	added := c.api.history(reqs[3].Body)[len(c.api.history(reqs[2].Body)):]
	require.Equal(t, "part threeGo on.", c.api.itemsText(added))
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
}

// recSeam: a continuation that repeats the last words of the cut text, or
// its trailing whitespace, is de-duplicated at the seam.
func recSeam(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: "First stop the service, then restart the server", Stop: "max_tokens"},
		mock.Reply{ID: "r2", Text: "restart the server and check the logs."},
	)
	a.user("How do I deploy?")
	r := a.send(t)
	requireFinished(t, c, r, "First stop the service, then restart the server and check the logs.")
	reqs := requireUpstream(t, h, c, 2)
	requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, "First stop the service, then restart the server", recInstruct)

	// Whitespace: the cut text ends with a blank line, the continuation
	// starts with one.
	h.mock.Script(
		mock.Reply{ID: "r3", Text: "Step one.\n\n", Stop: "max_tokens"},
		mock.Reply{ID: "r4", Text: "\n\nStep two."},
	)
	a.user("And then?")
	r = a.send(t)
	requireFinished(t, c, r, "Step one.\n\nStep two.")
	reqs = requireUpstream(t, h, c, 4)
	requireAppendOnly(t, c.api.api, reqs[1].Body, reqs[2].Body)
	requireContinuation(t, c.api, reqs[2].Body, reqs[3].Body, "Step one.\n\n", recInstruct)

	// A short repetition (under 8 bytes) is kept: it may be a coincidence.
	h.mock.Script(
		mock.Reply{ID: "r5", Text: "We need the", Stop: "max_tokens"},
		mock.Reply{ID: "r6", Text: "the keys."},
	)
	a.user("What else?")
	r = a.send(t)
	requireFinished(t, c, r, "We need thethe keys.")
	requireUpstream(t, h, c, 6)
	requireRecoveries(t, h, c, 3, 0, 0, 3, 3)
}

// recToolCallCut: the limit cut a tool call. The agent never sees the cut
// call; the continuation drops it and doubles the output limit; the model
// makes the call again in full and the agent gets it once. A reply that
// was only a cut call is asked again as it was, with the doubled limit.
func recToolCallCut(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{limit: 2000})
	full := `{"file_path":"a.go","content":"package a"}`
	h.mock.Script(
		mock.Reply{ID: "r1", Text: "Writing the file.", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: `{"file_path":"a.go"}`}},
			Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 2000}},
		mock.Reply{ID: "r2", ToolCalls: []mock.ToolCall{{ID: "w2", Name: "Write", Args: full}}, Usage: mock.Usage{Input: 150, Output: 30}},
	)
	a.user("Write a.go.")
	r := a.send(t)
	require.Equal(t, "Writing the file.", r.text, "events: %v", r.events)
	requireCalls(t, []mock.ToolCall{{ID: "w2", Name: "Write", Args: full}}, r.calls)
	require.Equal(t, c.api.callStop, r.stop)
	require.Empty(t, r.incomplete)
	require.EqualValues(t, 2030, r.output)
	if c.mode == "raw" {
		require.Equal(t, "1", r.attempts, "X-Shepherd-Recovery-Attempts")
	}
	reqs := requireUpstream(t, h, c, 2)
	require.EqualValues(t, 2000, gjson.GetBytes(reqs[0].Body, c.api.limit).Int(), "the agent's limit, above the floor")
	require.EqualValues(t, 4000, gjson.GetBytes(reqs[1].Body, c.api.limit).Int(), "the limit is doubled after a cut call")
	requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, "Writing the file.", recInstruct)
	require.Equal(t, -1, histIndex(modelHistory(t, c.api.api.name, reqs[1].Body), true, "w1"), "the cut call is not sent back")
	require.NotContains(t, string(reqs[1].Body), `"w1"`)

	// The agent runs the call: the model's view goes on from the
	// continuation, without the cut call.
	a.toolResult("w2", "Write")
	h.mock.Script(
		// Only a cut call this time: nothing to continue, asked again.
		mock.Reply{ID: "r3", ToolCalls: []mock.ToolCall{{ID: "w3", Name: "Read", Args: `{"path":"a.go"}`}}, Stop: "max_tokens"},
		mock.Reply{ID: "r4", ToolCalls: []mock.ToolCall{{ID: "w4", Name: "Read", Args: `{"path":"a.go","lines":10}`}}},
	)
	r = a.send(t)
	require.Empty(t, r.text)
	requireCalls(t, []mock.ToolCall{{ID: "w4", Name: "Read", Args: `{"path":"a.go","lines":10}`}}, r.calls)
	require.Equal(t, c.api.callStop, r.stop)
	reqs = requireUpstream(t, h, c, 4)
	requireAppendOnly(t, c.api.api, reqs[1].Body, reqs[2].Body)
	items := modelHistory(t, c.api.api.name, reqs[2].Body)
	require.Equal(t, -1, histIndex(items, true, "w1"))
	require.GreaterOrEqual(t, histIndex(items, true, "w2"), 0, "the completed call is in the model's history")
	require.Greater(t, histIndex(items, false, "w2"), histIndex(items, true, "w2"))
	require.EqualValues(t, 2000, gjson.GetBytes(reqs[2].Body, c.api.limit).Int(), "a new turn has the agent's limit")
	require.EqualValues(t, 4000, gjson.GetBytes(reqs[3].Body, c.api.limit).Int(), "the retry doubles it")
	require.Equal(t, c.api.history(reqs[2].Body), c.api.history(reqs[3].Body), "a reply that was only a cut call is asked again as it was")
	if c.mode == "raw" {
		require.Equal(t, "1", r.attempts)
	}

	a.toolResult("w4", "Read")
	h.mock.Script(mock.Reply{ID: "r5", Text: "Done."})
	r = a.send(t)
	requireFinished(t, c, r, "Done.")
	reqs = requireUpstream(t, h, c, 5)
	requireAppendOnly(t, c.api.api, reqs[3].Body, reqs[4].Body)
	items = modelHistory(t, c.api.api.name, reqs[4].Body)
	require.Equal(t, -1, histIndex(items, true, "w3"), "the cut call never reaches the model's history")
	require.Greater(t, histIndex(items, false, "w4"), histIndex(items, true, "w4"))
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
	requireRecoveries(t, h, c, 2, 0, 0, 2, 2)
}

// recThinking: the partial reply's thinking goes back to the model byte for
// byte; the agent's copy keeps only the first reply's thinking; the next
// turn's history has the continuation's thinking (through the ledger).
func recThinkingScenario(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{})
	think1 := mock.Thinking{Text: "The user wants the pangram.", Signature: "sig-one"}
	think2 := mock.Thinking{Text: "Finish the sentence.", Signature: "sig-two"}
	r1 := mock.Reply{ID: "r1", Thinking: &think1, Text: recPartial, Stop: "max_tokens"}
	want1 := recThinking{think1.Text, think1.Signature}
	want2 := recThinking{think2.Text, think2.Signature}
	if !c.api.api.d.SignsThinking() { // Chat's reasoning_content has no signature
		want1.sig, want2.sig = "", ""
	}
	var raw1 []string
	if c.mode != "stream" {
		raw1 = c.api.mockThinkingRaw(t, r1)
		require.Len(t, raw1, 1)
	}
	h.mock.Script(r1, mock.Reply{ID: "r2", Thinking: &think2, Text: recRest})
	a.user("Write the pangram.")
	r := a.send(t)
	requireFinished(t, c, r, recPangram)
	if r.thinkingKnown {
		require.Equal(t, []recThinking{want1}, r.thinking, "the agent's copy has the first reply's thinking only")
	}
	reqs := requireUpstream(t, h, c, 2)
	added := requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, recPartial, recInstruct)
	require.Equal(t, []recThinking{want1}, c.api.thinkings(t, added), "the partial reply's thinking goes back: %v", added)
	if raw1 != nil {
		require.Equal(t, raw1, c.api.thinkingRaw(added), "byte for byte")
	}
	require.NotContains(t, string(reqs[1].Body), think2.Text)

	a.user("Thanks.")
	h.mock.Script(mock.Reply{ID: "r3", Text: "Done."})
	r = a.send(t)
	requireFinished(t, c, r, "Done.")
	reqs = requireUpstream(t, h, c, 3)
	requireAppendOnly(t, c.api.api, reqs[1].Body, reqs[2].Body)
	added = c.api.history(reqs[2].Body)[len(c.api.history(reqs[1].Body)):]
	require.Equal(t, []recThinking{want2}, c.api.thinkings(t, added), "the continuation's thinking is in the model's history: %v", added)
	require.Equal(t, recRest+"Thanks.", c.api.itemsText(added))
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
}

// recNextTurns: after a recovered turn the agent's next requests extend the
// model's view byte for byte (the ledger puts back the partial reply, the
// instruction and the continuation), over several turns; the session
// counts the recovery.
func recNextTurns(t *testing.T, c recCase) {
	h := recHarness(t)
	session := recSession(t, c)
	a := c.agent(t, h, session, recAgentOpts{})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: recPartial, Stop: "max_tokens"},
		mock.Reply{ID: "r2", Text: recRest},
	)
	a.user("Write the pangram.")
	requireFinished(t, c, a.send(t), recPangram)
	for k := 0; k < 3; k++ {
		a.user(fmt.Sprintf("Again %d.", k))
		h.mock.Script(mock.Reply{ID: fmt.Sprintf("n%d", k), Text: fmt.Sprintf("Sure %d.", k)})
		requireFinished(t, c, a.send(t), fmt.Sprintf("Sure %d.", k))
	}
	reqs := requireUpstream(t, h, c, 5)
	for i := 1; i < len(reqs); i++ {
		requireAppendOnly(t, c.api.api, reqs[i-1].Body, reqs[i].Body)
	}
	added := c.api.history(reqs[2].Body)[len(c.api.history(reqs[1].Body)):]
	require.Equal(t, recRest+"Again 0.", c.api.itemsText(added), "the continuation, then the agent's message")
	hist := c.api.history(reqs[4].Body)
	if c.api.api.d.SystemInHistory() {
		hist = hist[1:] // the system message
	}
	require.Equal(t, "Write the pangram."+recPartial+recInstruct+recRest+"Again 0.Sure 0.Again 1.Sure 1.Again 2.",
		c.api.itemsText(hist), "the model's view: the turn as it happened")
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
	sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantOfHarness(t, h, session), Session: session})
	require.NoError(t, err)
	require.Equal(t, recovery.State{Truncated: 1, Attempts: 1, Recovered: 1}, *recoveryOf(t, sess))
}

// recPrefill (Anthropic, claude-3*): the continuation's last message is the
// partial reply, right-trimmed, and there is no instruction.
func recPrefill(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{model: "claude-3-5-sonnet-test"})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: recPartial + " ", Stop: "max_tokens"},
		mock.Reply{ID: "r2", Text: recRest},
	)
	a.user("Write the pangram.")
	r := a.send(t)
	requireFinished(t, c, r, recPangram)
	reqs := requireUpstream(t, h, c, 2)
	added := requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, recPartial+" ", "")
	require.Len(t, added, 1)
	require.Equal(t, "assistant", itemRole(added[0]))

	a.user("Thanks.")
	h.mock.Script(mock.Reply{ID: "r3", Text: "Done."})
	requireFinished(t, c, a.send(t), "Done.")
	reqs = requireUpstream(t, h, c, 3)
	requireAppendOnly(t, c.api.api, reqs[1].Body, reqs[2].Body)
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
}

// recFloor: a limit below recovery.min_output_tokens goes upstream raised
// to it.
func recFloor(t *testing.T, c recCase) {
	h := recHarness(t)
	a := c.agent(t, h, recSession(t, c), recAgentOpts{limit: 600})
	a.user("Hi.")
	requireFinished(t, c, a.send(t), "ok")
	reqs := requireUpstream(t, h, c, 1)
	require.EqualValues(t, 1200, gjson.GetBytes(reqs[0].Body, c.api.limit).Int(), "%s", reqs[0].Body)
}

// ---- non-streaming ----

func runRecovery(t *testing.T, scenario func(*testing.T, recCase), cases []recCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			scenario(t, c)
		})
	}
}

func TestRecoveryOneTruncation(t *testing.T) {
	runRecovery(t, recOneTruncation, recCases("raw", "unary"))
}

func TestRecoveryTwoTruncations(t *testing.T) {
	runRecovery(t, recTwoTruncations, recCases("raw", "unary"))
}

func TestRecoveryExhausted(t *testing.T) {
	runRecovery(t, recExhausted, recCases("raw", "unary"))
}

func TestRecoverySeam(t *testing.T) {
	runRecovery(t, recSeam, recCases("raw", "unary"))
}

func TestRecoveryToolCallCut(t *testing.T) {
	runRecovery(t, recToolCallCut, recCases("raw", "unary"))
}

func TestRecoveryThinking(t *testing.T) {
	runRecovery(t, recThinkingScenario, recCases("raw", "unary"))
}

func TestRecoveryNextTurnsAppendOnly(t *testing.T) {
	runRecovery(t, recNextTurns, recCases("raw", "unary"))
}

func TestRecoveryPrefill(t *testing.T) {
	var cases []recCase
	for _, c := range recCases("raw", "unary") {
		if c.api.api.d.Prefill() {
			cases = append(cases, c)
		}
	}
	runRecovery(t, recPrefill, cases)
}

// TestRecoveryPrefillNotWithThinking: a claude-3 request with extended
// thinking is continued by the instruction (Anthropic rejects prefill
// there).
func TestRecoveryPrefillNotWithThinking(t *testing.T) {
	h := recHarness(t)
	h.mock.Script(
		mock.Reply{ID: "r1", Thinking: &mock.Thinking{Text: "Hmm.", Signature: "s1"}, Text: recPartial, Stop: "max_tokens"},
		mock.Reply{ID: "r2", Text: recRest},
	)
	body := `{"model":"claude-3-7-sonnet-test","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":2000},` +
		`"messages":[{"role":"user","content":"Write the pangram."}]}`
	resp, b := do(t, "POST", h.URL+"/v1/messages", body, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode, string(b))
	r := parseRawReply(t, "anthropic", b)
	require.Equal(t, recPangram, r.text)
	require.Equal(t, "end_turn", r.stop)
	reqs := h.mock.Requests()
	require.Len(t, reqs, 2)
	api := recAPINamed(t, "anthropic")
	requireContinuation(t, api, reqs[0].Body, reqs[1].Body, recPartial, recInstruct)
}

func TestRecoveryOutputFloor(t *testing.T) {
	runRecovery(t, recFloor, recCases("raw", "unary"))
}

// TestRecoveryOutputFloorEdges: the floor leaves alone a limit above it, a
// request without a limit and Anthropic's 0 (cache pre-warm); it raises
// Chat's legacy max_tokens; it never goes above the model's maximum.
func TestRecoveryOutputFloorEdges(t *testing.T) {
	h := recHarness(t)
	send := func(api recAPI, body string) []byte {
		t.Helper()
		before := len(h.mock.Requests())
		resp, b := do(t, "POST", h.URL+api.rawPath(api.defaultModel()), body, api.api.headers)
		require.Equal(t, 200, resp.StatusCode, string(b))
		reqs := h.mock.Requests()
		require.Len(t, reqs, before+1)
		return reqs[before].Body
	}
	for _, api := range recAPIs() {
		hist := []string{api.api.user("Hi.")}
		got := send(api, api.rawRequest(api.defaultModel(), 5000, hist))
		require.EqualValues(t, 5000, gjson.GetBytes(got, api.limit).Int(), "%s: above the floor", api.api.name)
		body := api.rawRequest(api.defaultModel(), 600, hist)
		got = send(api, body)
		require.EqualValues(t, 1200, gjson.GetBytes(got, api.limit).Int(), "%s: raised to the floor", api.api.name)
		if api.api.d.RequiresLimit() {
			got = send(api, api.rawRequest(api.defaultModel(), 0, hist))
			require.EqualValues(t, 0, gjson.GetBytes(got, api.limit).Int(), "anthropic: 0 is a cache pre-warm")
			require.True(t, gjson.GetBytes(got, api.limit).Exists())
			continue
		}
		body = api.rawRequest(api.defaultModel(), noLimit, hist)
		got = send(api, body)
		require.Equal(t, body, string(got), "%s: no limit, nothing added", api.api.name)
	}
	chat := recAPINamed(t, "openai_chat")
	body := `{"model":"gpt-test","max_tokens":600,"messages":[{"role":"user","content":"Hi."}]}`
	got := send(chat, body)
	require.EqualValues(t, 1200, gjson.GetBytes(got, "max_tokens").Int(), "chat: legacy max_tokens raised")
	require.False(t, gjson.GetBytes(got, "max_completion_tokens").Exists(), "chat: no second limit field")

	// The model's maximum caps the floor.
	h2 := recHarness(t, func(c *config.Config) { c.Recovery.MinOutputTokens = 20000 })
	body = `{"model":"claude-3-5-sonnet-test","max_tokens":600,"messages":[{"role":"user","content":"Hi."}]}`
	resp, b := do(t, "POST", h2.URL+"/v1/messages", body, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode, string(b))
	last, _ := h2.mock.Last()
	require.EqualValues(t, 8192, gjson.GetBytes(last.Body, "max_tokens").Int(), "claude-3-5* maximum")
}

// TestRecoveryDisabled: with recovery off a cut reply reaches the agent as
// it is, in one request, and the floor does not apply.
func TestRecoveryDisabled(t *testing.T) {
	h := recHarness(t, func(c *config.Config) { c.Recovery.Enabled = false })
	for _, api := range recAPIs() {
		before := len(h.mock.Requests())
		h.mock.Script(mock.Reply{ID: "cut-" + api.api.name, Text: recPartial, Stop: "max_tokens"})
		resp, b := do(t, "POST", h.URL+api.rawPath(api.defaultModel()), api.rawRequest(api.defaultModel(), 600, []string{api.api.user("Hi.")}), api.api.headers)
		require.Equal(t, 200, resp.StatusCode, string(b))
		require.Empty(t, resp.Header.Get("X-Shepherd-Recovery-Attempts"))
		r := parseRawReply(t, api.api.name, b)
		require.Equal(t, recPartial, r.text)
		require.Equal(t, api.cutStop, r.stop)
		reqs := h.mock.Requests()
		require.Len(t, reqs, before+1, api.api.name)
		require.EqualValues(t, 600, gjson.GetBytes(reqs[before].Body, api.limit).Int())
	}
}

// TestRecoveryContinuationFails: a continuation request that fails leaves
// the agent with the reply so far (the real stop reason) and counts a
// failed recovery.
func TestRecoveryContinuationFails(t *testing.T) {
	for _, c := range recCases("raw", "stream") {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			h := recHarness(t)
			a := c.agent(t, h, recSession(t, c), recAgentOpts{})
			h.mock.Script(
				mock.Reply{ID: "r1", Text: recPartial, Stop: "max_tokens"},
				mock.Reply{Status: 529, ErrorMessage: "overloaded"},
			)
			a.user("Write the pangram.")
			r := a.send(t)
			require.Equal(t, recPartial, r.text)
			require.Equal(t, c.api.cutStop, r.stop)
			requireUpstream(t, h, c, 2)
			requireRecoveries(t, h, c, 0, 0, 1, 1, 1)
		})
	}
}

// recExhaustedInCall: the limit cuts a tool call on every attempt. The
// limit doubles up to the model's maximum; the agent gets the text so far,
// no partial call and the real stop reason; no cut call ever reaches the
// model's history.
func recExhaustedInCall(t *testing.T, c recCase) {
	h := recHarness(t, func(cfg *config.Config) { cfg.Recovery.MaxOutputTokens = []string{"*=7000"} })
	a := c.agent(t, h, recSession(t, c), recAgentOpts{limit: 3000})
	cut := func(id, text, call string) mock.Reply {
		return mock.Reply{ID: id, Text: text, Stop: "max_tokens",
			ToolCalls: []mock.ToolCall{{ID: call, Name: "Write", Args: `{"file_path":"a.go"}`}}}
	}
	h.mock.Script(cut("r1", "Writing.", "w1"), cut("r2", "", "w2"), cut("r3", "", "w3"))
	a.user("Write a.go.")
	r := a.send(t)
	require.Equal(t, "Writing.", r.text, "events: %v", r.events)
	require.Empty(t, r.calls, "no partial call reaches the agent")
	require.Equal(t, c.api.cutStop, r.stop)
	if c.mode == "raw" {
		require.Equal(t, "2", r.attempts)
	}
	reqs := requireUpstream(t, h, c, 3)
	require.EqualValues(t, 3000, gjson.GetBytes(reqs[0].Body, c.api.limit).Int())
	require.EqualValues(t, 6000, gjson.GetBytes(reqs[1].Body, c.api.limit).Int(), "doubled")
	require.EqualValues(t, 7000, gjson.GetBytes(reqs[2].Body, c.api.limit).Int(), "doubled, capped by the model's maximum")
	requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, "Writing.", recInstruct)
	require.Equal(t, c.api.history(reqs[1].Body), c.api.history(reqs[2].Body), "a reply that was only a cut call is asked again")
	requireRecoveries(t, h, c, 0, 1, 0, 2, 3)

	a.user("Try again.")
	h.mock.Script(mock.Reply{ID: "r4", Text: "Done."})
	requireFinished(t, c, a.send(t), "Done.")
	reqs = requireUpstream(t, h, c, 4)
	requireAppendOnly(t, c.api.api, reqs[2].Body, reqs[3].Body)
	require.Empty(t, modelHistory(t, c.api.api.name, reqs[3].Body), "no cut call in the model's history")
	require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
}

func TestRecoveryExhaustedInToolCall(t *testing.T) {
	runRecovery(t, recExhaustedInCall, recCases("raw", "unary", "stream"))
}

// TestRecoveryWithTopics: recovery inside a turn the topics feature
// continues: the model opens a chapter alone (shepherd answers and follows
// up), the follow-up's reply is cut and continued; the agent gets one
// reply with the merged text, and the next turn extends the model's view.
func TestRecoveryWithTopics(t *testing.T) {
	runRecovery(t, func(t *testing.T, c recCase) {
		h := recHarness(t, func(cfg *config.Config) { cfg.Topics.Enabled = true })
		a := c.agent(t, h, recSession(t, c), recAgentOpts{})
		h.mock.Script(
			mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Pangram"}`}}},
			mock.Reply{ID: "r2", Text: recPartial, Stop: "max_tokens"},
			mock.Reply{ID: "r3", Text: recRest},
		)
		a.user("Write the pangram.")
		r := a.send(t)
		requireFinished(t, c, r, recPangram)
		reqs := requireUpstream(t, h, c, 3)
		requireAppendOnly(t, c.api.api, reqs[0].Body, reqs[1].Body)
		requireContinuation(t, c.api, reqs[1].Body, reqs[2].Body, recPartial, recInstruct)
		requireRecoveries(t, h, c, 1, 0, 0, 1, 1)

		a.user("Thanks.")
		h.mock.Script(mock.Reply{ID: "r4", Text: "Done."})
		requireFinished(t, c, a.send(t), "Done.")
		reqs = requireUpstream(t, h, c, 4)
		requireAppendOnly(t, c.api.api, reqs[2].Body, reqs[3].Body)
		require.Contains(t, string(reqs[3].Body), "[Active Topic: Pangram]")
		require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
	}, recCases("raw", "stream"))
}

// TestRecoveryContextWindowNotContinued: Anthropic's
// model_context_window_exceeded is counted but not continued (more output
// cannot fit).
func TestRecoveryContextWindowNotContinued(t *testing.T) {
	h := recHarness(t)
	h.mock.Script(mock.Reply{ID: "r1", Text: recPartial, Stop: "model_context_window_exceeded"})
	api := recAPINamed(t, "anthropic")
	resp, b := do(t, "POST", h.URL+"/v1/messages", api.rawRequest("claude-test", 2000, []string{api.api.user("Hi.")}), anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.Empty(t, resp.Header.Get("X-Shepherd-Recovery-Attempts"))
	r := parseRawReply(t, "anthropic", b)
	require.Equal(t, recPartial, r.text)
	require.Equal(t, "model_context_window_exceeded", r.stop)
	require.Len(t, h.mock.Requests(), 1)
	require.Equal(t, 1.0, metricSum(t, h, "shepherd_truncations_total", `route="messages"`, `stop="context_window"`))
	require.Zero(t, metricSum(t, h, "shepherd_recoveries_total"))
	require.Zero(t, metricSum(t, h, "shepherd_recovery_attempts_total"))
}

// TestRecoveryToolCallCutWithoutLimit: a request without an output limit
// keeps none when a cut call is asked again (the provider's default is the
// model's maximum already).
func TestRecoveryToolCallCutWithoutLimit(t *testing.T) {
	for _, api := range recAPIs() {
		if api.api.d.RequiresLimit() { // Anthropic requires max_tokens
			continue
		}
		t.Run(api.api.name, func(t *testing.T) {
			t.Parallel()
			h := recHarness(t)
			h.mock.Script(
				mock.Reply{ID: "r1", Text: "Writing.", ToolCalls: []mock.ToolCall{{ID: "w1", Name: "Write", Args: `{}`}}, Stop: "max_tokens"},
				mock.Reply{ID: "r2", ToolCalls: []mock.ToolCall{{ID: "w2", Name: "Write", Args: `{"file_path":"a.go"}`}}},
			)
			body := api.rawRequest(api.defaultModel(), noLimit, []string{api.api.user("Write.")})
			resp, b := do(t, "POST", h.URL+api.rawPath(api.defaultModel()), body, api.api.headers)
			require.Equal(t, 200, resp.StatusCode, string(b))
			r := parseRawReply(t, api.api.name, b)
			requireCalls(t, []mock.ToolCall{{ID: "w2", Name: "Write", Args: `{"file_path":"a.go"}`}}, r.calls)
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			require.False(t, gjson.GetBytes(reqs[1].Body, api.limit).Exists(), "%s", reqs[1].Body)
		})
	}
}

// TestRecoveryGeminiArrayStreamPassesThrough: Gemini's streamGenerateContent
// without alt=sse (a streamed JSON array) passes through untouched (the
// turn engine serves JSON and SSE only): no recovery, no floor.
func TestRecoveryGeminiArrayStreamPassesThrough(t *testing.T) {
	h := recHarness(t)
	h.mock.Script(
		mock.Reply{ID: "r1", Text: recPartial, Stop: "max_tokens"},
		mock.Reply{ID: "r2", Text: recRest},
	)
	api := recAPINamed(t, "gemini")
	body := api.rawRequest("gemini-test", 600, []string{api.api.user("Hi.")})
	resp, b := do(t, "POST", h.URL+"/v1beta/models/gemini-test:streamGenerateContent", body, geminiHeaders())
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.True(t, gjson.ValidBytes(b), "one JSON array: %s", b)
	var text strings.Builder
	var finish string
	for _, c := range gjson.ParseBytes(b).Array() {
		for _, p := range c.Get("candidates.0.content.parts").Array() {
			text.WriteString(p.Get("text").String())
		}
		if f := c.Get("candidates.0.finishReason").String(); f != "" {
			finish = f
		}
	}
	require.Equal(t, recPartial, text.String())
	require.Equal(t, "MAX_TOKENS", finish)
	reqs := h.mock.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, body, string(reqs[0].Body), "untouched")
	require.Equal(t, 1, h.mock.Pending())
}

// TestRecoveryCutTopicCall: a reply cut after a create_new_topic call is
// continued, not answered: the chapter opens once, when the model makes
// the call again in the continuation.
func TestRecoveryCutTopicCall(t *testing.T) {
	runRecovery(t, func(t *testing.T, c recCase) {
		h := recHarness(t, func(cfg *config.Config) { cfg.Topics.Enabled = true })
		session := recSession(t, c)
		a := c.agent(t, h, session, recAgentOpts{})
		h.mock.Script(
			mock.Reply{ID: "r1", Text: "Opening a chapter.", Stop: "max_tokens",
				ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Alpha"}`}}},
			mock.Reply{ID: "r2", ToolCalls: []mock.ToolCall{{ID: "t2", Name: "create_new_topic", Args: `{"title":"Alpha"}`}}},
			mock.Reply{ID: "r3", Text: "Done."},
		)
		a.user("Start.")
		r := a.send(t)
		require.Equal(t, "Opening a chapter.Done.", r.text)
		require.Empty(t, r.calls)
		require.Equal(t, c.api.endStop, r.stop)
		reqs := requireUpstream(t, h, c, 3)
		requireContinuation(t, c.api, reqs[0].Body, reqs[1].Body, "Opening a chapter.", recInstruct)
		requireAppendOnly(t, c.api.api, reqs[1].Body, reqs[2].Body)
		require.Equal(t, -1, histIndex(modelHistory(t, c.api.api.name, reqs[2].Body), true, "t1"))
		require.Equal(t, 1.0, metricValue(t, h, "shepherd_topic_changes_total", ""))
		sess := intentSession(t, h, session)
		require.Len(t, topicsOf(t, sess).Chapters, 1)
		require.Equal(t, "Alpha", topicsOf(t, sess).Topic)

		a.user("Next.")
		h.mock.Script(mock.Reply{ID: "r4", Text: "Ok."})
		requireFinished(t, c, a.send(t), "Ok.")
		reqs = requireUpstream(t, h, c, 4)
		requireAppendOnly(t, c.api.api, reqs[2].Body, reqs[3].Body)
		require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`))
	}, recCases("raw", "stream"))
}
