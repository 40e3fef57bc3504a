package context_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// The chat of the gating tests: a first question, an unrelated new one, a
// pronoun follow-up of the new one.
var gatingChat = []struct{ user, reply string }{
	{"What is the capital of France?", "Paris."},
	{"How do I bake a loaf of sourdough bread at home?", "Mix flour, water and starter, then bake."},
	{"Does it need a long time to rise?", "About eight hours."},
}

// chatThrough runs gatingChat through r on d (streamed or not), each
// request with header, and returns the upstream bodies.
func chatThrough(t *testing.T, r *rig, d kit.Driver, stream bool, header map[string]string) [][]byte {
	t.Helper()
	a := kit.NewAgent(d, r.URL, header)
	a.Request.Stream = stream
	for _, turn := range gatingChat {
		r.Mock.Script(mock.Reply{Text: turn.reply})
		a.User(turn.user)
		resp, body := a.Post(t)
		require.Equal(t, 200, resp.StatusCode, string(body))
		read := d.ParseReply
		if stream {
			read = d.ParseStream
		}
		reply, err := read(body)
		require.NoError(t, err)
		require.Equal(t, turn.reply, reply.Text)
		if stream { // the agent keeps the streamed reply as an SDK would
			a.History = append(a.History, d.Echo([]byte(strings.Replace(d.MinimalReply(), `"ok"`, kit.Quote(turn.reply), 1)))...)
		}
	}
	bodies := r.upstreamBodies()
	require.Len(t, bodies, len(gatingChat))
	return bodies
}

// userTexts lists the visible texts of the user messages of an upstream
// body (topics' reminder, appended to user turns, cut off).
func userTexts(d kit.Driver, body []byte) []string {
	var out []string
	for _, it := range kit.History(d, body) {
		txt := d.ItemText(it)
		for _, turn := range gatingChat {
			if strings.HasPrefix(txt, turn.user) {
				out = append(out, turn.user)
			}
		}
	}
	return out
}

func gatingOn(enabled hooks.OptIn) func(*config.Config) {
	return func(c *config.Config) { c.Gating.Enabled = enabled }
}

// Every API, streamed and not: the new question goes upstream with only the
// system prompt; its follow-up carries the new topic's history only and
// extends the previous upstream request append-only.
func TestGatingChat(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range []bool{false, true} {
			name := d.Name()
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, rigOptions{Configure: gatingOn(hooks.OptInOn)})
				bodies := chatThrough(t, r, d, stream, map[string]string{"X-Session-Id": "gating-" + name})
				system := 0
				if d.SystemInHistory() {
					system = 1
					require.Contains(t, kit.History(d, bodies[1])[0], "You are terse.", "Chat keeps its system message")
				}
				for _, b := range bodies {
					require.Contains(t, string(b), "You are terse.", "the system prompt always goes")
				}

				require.Equal(t, []string{gatingChat[1].user}, userTexts(d, bodies[1]), "a new topic: the new message alone")
				require.Len(t, kit.History(d, bodies[1]), system+1)
				require.NotContains(t, string(bodies[1]), "Paris.")

				require.Equal(t, []string{gatingChat[1].user, gatingChat[2].user}, userTexts(d, bodies[2]), "the follow-up: the new topic's history")
				require.Len(t, kit.History(d, bodies[2]), system+3)
				require.NotContains(t, string(bodies[2]), "capital of France")
				require.Equal(t, -1, kit.PrefixBreak(d, bodies[1], bodies[2]), "the follow-up extends the new topic's request append-only")

				var got []string
				for _, ev := range r.Events.Of(events.HistoryGated) {
					got = append(got, ev.Data["decision"].(string)+"/"+ev.Data["reason"].(string))
				}
				require.Equal(t, []string{"new_topic/no_history", "new_topic/no_link", "follow_up/leading_pronoun"}, got)
				dropped := r.Events.Of(events.HistoryGated)[1].Data["dropped"]
				require.EqualValues(t, 2, dropped)

				m := r.metrics(t)
				require.Equal(t, 1.0, m.Value("shepherd_gating_decisions_total", `decision="new_topic"`, `reason="no_link"`))
				require.Equal(t, 1.0, m.Value("shepherd_gating_decisions_total", `decision="follow_up"`, `reason="leading_pronoun"`))
			})
		}
	}
}

// Off (the default), every request carries the whole history and no
// decision is made.
func TestGatingOff(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, rigOptions{})
			bodies := chatThrough(t, r, d, false, map[string]string{"X-Session-Id": "gating-off-" + d.Name()})
			require.Equal(t, []string{gatingChat[0].user, gatingChat[1].user}, userTexts(d, bodies[1]))
			require.Equal(t, []string{gatingChat[0].user, gatingChat[1].user, gatingChat[2].user}, userTexts(d, bodies[2]))
			require.Empty(t, r.Events.Of(events.HistoryGated))
			require.False(t, r.metrics(t).Has("shepherd_gating_decisions_total"))
		})
	}
}

// enabled: header gates only the requests whose X-Shepherd-Features names
// gating.
func TestGatingHeader(t *testing.T) {
	d := kit.Get(t, "anthropic")
	r := newRig(t, rigOptions{Configure: gatingOn(hooks.OptInHeader)})
	bodies := chatThrough(t, r, d, false, map[string]string{"X-Session-Id": "gating-header", "X-Shepherd-Features": "format, Gating"})
	require.Equal(t, []string{gatingChat[1].user}, userTexts(d, bodies[1]))

	r = newRig(t, rigOptions{Configure: gatingOn(hooks.OptInHeader)})
	bodies = chatThrough(t, r, d, false, map[string]string{"X-Session-Id": "gating-no-header"})
	require.Equal(t, []string{gatingChat[0].user, gatingChat[1].user}, userTexts(d, bodies[1]))
	require.Empty(t, r.Events.Of(events.HistoryGated))
	require.Len(t, gjson.GetBytes(bodies[2], d.HistoryPath()).Array(), 5)
}

// A tool loop inside a new topic is always a follow-up: the tool results
// go up with the topic's history only, append-only.
func TestGatingToolLoop(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, rigOptions{Configure: gatingOn(hooks.OptInOn)})
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "gating-tools-" + d.Name()})
			r.Mock.Script(mock.Reply{Text: gatingChat[0].reply})
			a.User(gatingChat[0].user)
			a.Send(t)
			r.Mock.Script(mock.Reply{ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "Read", Args: `{"path":"recipe.md"}`}}},
				mock.Reply{Text: "Use the recipe."})
			a.User(gatingChat[1].user)
			reply, _, _ := a.Send(t)
			require.Len(t, reply.Calls, 1)
			a.ToolResult(reply.Calls[0].ID, "Read", "flour, water, salt")
			a.Send(t)

			bodies := r.upstreamBodies()
			require.Len(t, bodies, 3)
			require.NotContains(t, string(bodies[2]), "capital of France")
			require.Contains(t, string(bodies[2]), "flour, water, salt")
			require.Equal(t, -1, kit.PrefixBreak(d, bodies[1], bodies[2]))
			evs := r.Events.Of(events.HistoryGated)
			require.Len(t, evs, 3)
			require.Equal(t, "tool_loop", evs[2].Data["reason"])
			require.EqualValues(t, 2, evs[2].Data["dropped"])
		})
	}
}
