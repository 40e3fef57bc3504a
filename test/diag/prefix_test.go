package diag_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// turn sends the agent's next turn, streamed or not, requires a 200 and
// appends the reply to the history as the agent would.
func turn(t *testing.T, a *kit.Agent, stream bool) {
	t.Helper()
	a.Request.Stream = stream
	resp, body := a.Post(t)
	require.Equal(t, 200, resp.StatusCode, string(body))
	if stream {
		r, err := a.D.ParseStream(body)
		require.NoError(t, err, string(body))
		a.History = append(a.History, textEcho(a.D, r.Text))
	}
}

// textEcho is a text-only reply as the history item an SDK sends back.
func textEcho(d kit.Driver, text string) string {
	q := kit.Quote(text)
	switch d.Name() {
	case "anthropic":
		return `{"role":"assistant","content":[{"type":"text","text":` + q + `}]}`
	case "openai_chat":
		return `{"role":"assistant","content":` + q + `}`
	case "openai_responses":
		return `{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + q + `}]}`
	default:
		return `{"role":"model","parts":[{"text":` + q + `}]}`
	}
}

// TestPrefixIntactThenClientBreak: on every API, streamed and not, three
// turns that extend each other report an intact prefix (feed, sessions
// API); then the agent rewrites an earlier answer and the fourth turn
// reports the break at the byte where that answer's element starts in the
// upstream body, caused by the client, counted in the metrics.
func TestPrefixIntactThenClientBreak(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d.Name(), stream), func(t *testing.T) {
				r := newRig(t, nil)
				sid := fmt.Sprintf("px-%s-%v", d.Name(), stream)
				a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": sid})
				for i := range 3 {
					r.Mock.Script(mock.Reply{Text: fmt.Sprintf("answer %d", i)})
					a.User(fmt.Sprintf("question %d", i))
					turn(t, a, stream)
				}
				evs := r.finished(t, 3)
				hashes := map[string]bool{}
				for i, ev := range evs {
					require.Equal(t, -1, ev.Data["prefix_break_offset"], "turn %d", i)
					require.Equal(t, "", ev.Data["prefix_break_cause"], "turn %d", i)
					h, _ := ev.Data["prefix_hash"].(string)
					require.Len(t, h, 16)
					hashes[h] = true
				}
				require.Len(t, hashes, 3, "each turn sent a longer conversation")
				bodies := r.upstreamBodies()
				for i := 1; i < 3; i++ {
					require.Equal(t, -1, kit.PrefixBreak(d, bodies[i-1], bodies[i]))
				}

				sess := r.session(t, sid)
				pts, _ := sess["prefix_turns"].([]any)
				require.Len(t, pts, 3)
				for i, p := range pts {
					pt := p.(map[string]any)
					require.Equal(t, i == 0, pt["first"] == true, "turn %d", i)
					require.Equal(t, float64(-1), pt["break_offset"])
					require.Equal(t, evs[i].Data["prefix_hash"], pt["prefix_hash"])
					require.Contains(t, pt, "cache_read_tokens")
				}

				// The agent rewrites its first answer.
				a.History[1] = textEcho(d, "answer 0, edited")
				r.Mock.Script(mock.Reply{Text: "answer 3"})
				a.User("question 3")
				turn(t, a, stream)
				last := r.finished(t, 4)[3].Data
				bodies = r.upstreamBodies()
				k := kit.PrefixBreak(d, bodies[2], bodies[3])
				require.GreaterOrEqual(t, k, 0)
				want := int(gjson.GetBytes(bodies[3], d.HistoryPath()).Array()[k].Index)
				require.Equal(t, want, last["prefix_break_offset"])
				require.Equal(t, "client", last["prefix_break_cause"])
				require.Equal(t, float64(1), kit.Metrics(t, r.URL+"/metrics").Value("shepherd_prefix_breaks_total", `cause="client"`))

				sess = r.session(t, sid)
				pts, _ = sess["prefix_turns"].([]any)
				require.Len(t, pts, 4)
				pt := pts[3].(map[string]any)
				require.Equal(t, float64(want), pt["break_offset"])
				require.Equal(t, float64(k), pt["break_element"])
				require.Equal(t, "client", pt["cause"])
				require.Equal(t, map[string]any{"client": float64(1)}, sess["prefix_breaks"])
				require.Equal(t, float64(1), sess["counts"].(map[string]any)["prefix_breaks"])
			})
		}
	}
}
