package proxy_test

// A long session with truncation recovery: the recovery targets (the
// truncation rate the agent sees, the recovery success rate) read off the
// metrics after a scripted run, and the model's view stays append-only over
// every turn.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/state"
)

// recRunKind is how turn k of the hundred-turn session goes upstream.
type recRunKind int

const (
	runPlain     recRunKind = iota // one complete reply
	runTool                        // an agent tool call, answered next turn
	runOne                         // cut once, then complete
	runTwo                         // cut twice, then complete
	runExhausted                   // cut three times: still cut after the last attempt
)

// recRunSchedule: 15 truncated turns (every sixth from turn 2): 10 recover
// after one continuation, 4 after two, 1 is still cut after both; an agent
// tool call every tenth turn (from turn 5).
func recRunSchedule(k int) recRunKind {
	if k%10 == 5 {
		return runTool
	}
	if k < 2 || (k-2)%6 != 0 || (k-2)/6 >= 15 {
		return runPlain
	}
	switch i := (k - 2) / 6; i {
	case 7:
		return runExhausted
	case 1, 4, 10, 13:
		return runTwo
	}
	return runOne
}

// TestRecoveryHundredTurns drives a 100-turn session per API through the
// official SDK, alternating streamed and non-streamed turns, with 15 turns
// cut by the output limit. Every upstream request extends the previous one
// byte for byte; the agent sees one truncated reply (1%) and recovery
// succeeds on 14 of the 15 truncated turns.
func TestRecoveryHundredTurns(t *testing.T) {
	const turns = 100
	for _, c := range recCases("stream") {
		t.Run(c.api.api.name, func(t *testing.T) {
			t.Parallel()
			h := recHarness(t)
			session := "hundred-" + c.api.api.name
			a := c.agent(t, h, session, recAgentOpts{}).(*sdkRecAgent)

			agentCut, seen := 0, 0
			wantUp := 0
			var scheduled struct{ truncated, cuts, continuations, recovered, exhausted int }
			a.user("Start.")
			for k := 0; k < turns; k++ {
				a.stream = k%2 == 0
				kind := recRunSchedule(k)
				text := fmt.Sprintf("Answer %d.", k)
				switch kind {
				case runPlain:
					h.mock.Script(mock.Reply{ID: fmt.Sprintf("p%d", k), Text: text})
				case runTool:
					text = ""
					h.mock.Script(mock.Reply{ID: fmt.Sprintf("p%d", k), ToolCalls: []mock.ToolCall{{ID: fmt.Sprintf("c%d", k), Name: "Read", Args: `{"path":"a.go"}`}}})
				case runOne:
					h.mock.Script(
						mock.Reply{ID: fmt.Sprintf("a%d", k), Text: fmt.Sprintf("Answer %d, ", k), Stop: "max_tokens"},
						mock.Reply{ID: fmt.Sprintf("b%d", k), Text: "done."},
					)
					text = fmt.Sprintf("Answer %d, done.", k)
				case runTwo:
					h.mock.Script(
						mock.Reply{ID: fmt.Sprintf("a%d", k), Text: fmt.Sprintf("Answer %d, ", k), Stop: "max_tokens"},
						mock.Reply{ID: fmt.Sprintf("b%d", k), Text: "more, ", Stop: "max_tokens"},
						mock.Reply{ID: fmt.Sprintf("c%d", k), Text: "done."},
					)
					text = fmt.Sprintf("Answer %d, more, done.", k)
				case runExhausted:
					h.mock.Script(
						mock.Reply{ID: fmt.Sprintf("a%d", k), Text: fmt.Sprintf("Answer %d, ", k), Stop: "max_tokens"},
						mock.Reply{ID: fmt.Sprintf("b%d", k), Text: "more, ", Stop: "max_tokens"},
						mock.Reply{ID: fmt.Sprintf("c%d", k), Text: "still more", Stop: "max_tokens"},
					)
					text = fmt.Sprintf("Answer %d, more, still more", k)
				}
				up := map[recRunKind]int{runPlain: 1, runTool: 1, runOne: 2, runTwo: 3, runExhausted: 3}[kind]
				wantUp += up
				if kind >= runOne {
					scheduled.truncated++
					scheduled.continuations += up - 1
					scheduled.cuts += up - 1
					if kind == runExhausted {
						scheduled.cuts++
						scheduled.exhausted++
					} else {
						scheduled.recovered++
					}
				}

				r := a.send(t)
				require.Equal(t, text, r.text, "turn %d (stream=%v): events %v", k, a.stream, r.events)
				switch {
				case r.stop == c.api.cutStop:
					agentCut++
				case kind == runTool:
					require.Equal(t, c.api.callStop, r.stop, "turn %d", k)
				default:
					require.Equal(t, c.api.endStop, r.stop, "turn %d", k)
				}
				reqs := h.mock.Requests()
				require.Len(t, reqs, wantUp, "turn %d", k)
				for i := seen; i < len(reqs); i++ {
					require.Equal(t, a.stream, reqs[i].Stream, "turn %d", k)
					if i > 0 {
						func() {
							defer func() {
								if t.Failed() {
									t.Logf("turn %d: append-only broken between upstream requests %d and %d", k, i, i+1)
								}
							}()
							requireAppendOnly(t, c.api.api, reqs[i-1].Body, reqs[i].Body)
						}()
					}
				}
				seen = len(reqs)
				if kind == runTool {
					requireCalls(t, []mock.ToolCall{{ID: fmt.Sprintf("c%d", k), Name: "Read", Args: `{"path":"a.go"}`}}, r.calls)
					a.toolResult(r.calls[0].ID, r.calls[0].Name)
				} else {
					a.user(fmt.Sprintf("Next %d.", k))
				}
			}

			// The recovery targets, read off the metrics.
			sum := func(name string, labels ...string) int {
				return int(metricSum(t, h, name, labels...))
			}
			recovered := sum("shepherd_recoveries_total", `result="recovered"`)
			exhausted := sum("shepherd_recoveries_total", `result="exhausted"`)
			failed := sum("shepherd_recoveries_total", `result="failed"`)
			continuations := sum("shepherd_recovery_attempts_total")
			cuts := sum("shepherd_truncations_total", `stop="max_tokens"`)
			require.Equal(t, scheduled.recovered, recovered)
			require.Equal(t, scheduled.exhausted, exhausted)
			require.Zero(t, failed)
			require.Equal(t, scheduled.continuations, continuations)
			require.Equal(t, scheduled.cuts, cuts)
			require.Equal(t, 120, wantUp, "100 turns and 20 continuations")
			require.Zero(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="missed"`), "every recorded turn was replayed")

			truncationRate := float64(exhausted) / turns
			success := float64(recovered) / float64(recovered+exhausted+failed)
			require.Equal(t, agentCut, exhausted, "the agent saw exactly the exhausted turns cut")
			require.InDelta(t, 0.01, truncationRate, 1e-9)
			require.InDelta(t, 14.0/15.0, success, 1e-9)

			sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantOfHarness(t, h, session), Session: session})
			require.NoError(t, err)
			require.Equal(t, recovery.State{Truncated: 15, Attempts: 20, Recovered: 14}, *recoveryOf(t, sess))
			require.EqualValues(t, turns, sess.Requests)

			t.Logf("%s: %d turns, %d truncated upstream (%d cut replies, %d continuations, %d upstream requests), agent saw %d truncated (%.1f%%), recovery success %.1f%% (%d recovered, %d exhausted, %d failed)",
				c.api.api.name, turns, scheduled.truncated, cuts, continuations, wantUp, agentCut, 100*truncationRate, 100*success, recovered, exhausted, failed)
		})
	}
}
