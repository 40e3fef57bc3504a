package context_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// formatInstruction is what the summary rule appends.
const formatInstruction = "Format: at most 120 words; at most 5 bullets."

func formatOn(enabled hooks.OptIn) func(*config.Config) {
	return func(c *config.Config) {
		c.Format.Enabled = enabled
		c.Format.Rules = []string{
			`summary match=(?i)\bsummar(y|ise|ize)\b words=120 bullets=5`,
			`why match=(?i)^why text="Answer in one sentence."`,
		}
	}
}

// formatSession runs the format scenario: a prompt that matches the
// summary rule (answered with text), a prompt that matches nothing
// (answered with a call), the call's result (answered with text). It
// returns the upstream bodies.
func formatSession(t *testing.T, r *rig, d kit.Driver, stream bool, header map[string]string) [][]byte {
	t.Helper()
	a := kit.NewAgent(d, r.URL, header)
	r.Mock.Script(mock.Reply{Text: "- the design in brief"})
	a.User("Summarise the design doc for me")
	pfTurn(t, a, stream)

	r.Mock.Script(mock.Reply{Text: "Reading.", ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "Read", Args: `{"path":"a.go"}`}}})
	a.User("now fix the failing test")
	pfTurn(t, a, stream)

	r.Mock.Script(mock.Reply{Text: "Fixed."})
	a.ToolResult("call_1", "Read", "package a")
	pfTurn(t, a, stream)

	bodies := r.upstreamBodies()
	require.Len(t, bodies, 3)
	return bodies
}

// TestFormatAppliedAndReplayed: on every API, streamed and not, a prompt
// matching a rule gets the rule's instruction at the end of its turn, once
// (event and metric); the later requests repeat it byte for byte where it
// was and add nothing for a prompt that matches no rule or for tool
// results; the upstream view stays append-only.
func TestFormatAppliedAndReplayed(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d.Name(), stream), func(t *testing.T) {
				r := newRig(t, rigOptions{Configure: formatOn(hooks.OptInOn)})
				bodies := formatSession(t, r, d, stream, map[string]string{"X-Session-Id": "format-" + d.Name()})

				evs := r.Events.Of(events.FormatApplied)
				require.Len(t, evs, 1)
				require.Equal(t, map[string]any{"rule": "summary"}, evs[0].Data)
				require.Equal(t, "format-"+d.Name(), evs[0].Session)
				m := r.metrics(t)
				require.Equal(t, 1.0, m.Value("shepherd_format_applied_total", `rule="summary"`))
				require.Equal(t, 0.0, m.Value("shepherd_format_applied_total", `rule="why"`))
				require.True(t, m.Has("shepherd_format_applied_total"))

				instr := kit.Quote(formatInstruction)
				for i, b := range bodies {
					require.Equal(t, 1, strings.Count(string(b), instr), "request %d carries the instruction once", i)
				}
				h0 := pfHistory(d, bodies[0])
				prompt := h0[len(h0)-1]
				require.True(t, strings.HasSuffix(d.ItemText(prompt), formatInstruction), "the instruction ends the prompt's turn: %s", prompt)
				require.Contains(t, prompt, "Summarise the design doc")
				for i := 1; i < len(bodies); i++ {
					h := pfHistory(d, bodies[i])
					require.Equal(t, prompt, h[len(h0)-1], "request %d replays the prompt's turn byte for byte", i)
					require.NotContains(t, h[len(h)-1], instr)
				}
				pfAppendOnly(t, d, bodies)
			})
		}
	}
}

// TestFormatHeaderOptIn: with enabled header, only a request naming format
// in X-Shepherd-Features gets the instruction.
func TestFormatHeaderOptIn(t *testing.T) {
	d := kit.Drivers()[0]
	r := newRig(t, rigOptions{Configure: formatOn(hooks.OptInHeader)})
	formatSession(t, r, d, false, map[string]string{"X-Session-Id": "format-no-header"})
	require.Empty(t, r.Events.Of(events.FormatApplied))
	require.NotContains(t, string(r.upstreamBodies()[0]), kit.Quote(formatInstruction))

	r = newRig(t, rigOptions{Configure: formatOn(hooks.OptInHeader)})
	bodies := formatSession(t, r, d, false, map[string]string{"X-Session-Id": "format-header", hooks.FeaturesHeader: "FORMAT"})
	require.Len(t, r.Events.Of(events.FormatApplied), 1)
	require.Contains(t, string(bodies[0]), kit.Quote(formatInstruction))
	pfAppendOnly(t, d, bodies)
}

// TestFormatOffChangesNothing: off (the default), and on with rules no
// prompt matches, the upstream requests are byte for byte those of a proxy
// without the feature.
func TestFormatOffChangesNothing(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			header := map[string]string{"X-Session-Id": "format-off-" + d.Name()}
			off := newRig(t, rigOptions{})
			offBodies := formatSession(t, off, d, false, header)
			require.Empty(t, off.Events.Of(events.FormatApplied))
			require.False(t, off.metrics(t).Has("shepherd_format_applied_total"))

			unmatched := newRig(t, rigOptions{Configure: func(c *config.Config) {
				c.Format.Enabled, c.Format.Rules = hooks.OptInOn, []string{`haiku match=(?i)\bhaiku\b text="Answer in a haiku."`}
			}})
			require.Equal(t, offBodies, formatSession(t, unmatched, d, false, header))
			require.Empty(t, unmatched.Events.Of(events.FormatApplied))
		})
	}
}

// TestFormatOpeningRequest: without a session header the first request
// opens the conversation (its state is saved under the fingerprint of its
// continuation); the instruction it got is still replayed on the later
// requests.
func TestFormatOpeningRequest(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, rigOptions{Configure: formatOn(hooks.OptInOn)})
			bodies := formatSession(t, r, d, false, nil)
			for i, b := range bodies {
				require.Equal(t, 1, strings.Count(string(b), kit.Quote(formatInstruction)), "request %d carries the instruction once", i)
			}
			pfAppendOnly(t, d, bodies)
		})
	}
}
