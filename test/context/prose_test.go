package context_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/prose"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// longProse is a tool-loop reply's prose: 45 words, over prose.min_words.
var longProse = strings.TrimSpace(strings.Repeat("The fixture is stale so the test fails here. ", 5))

// pfTurn sends the agent's next turn, streamed or not, requires a 200
// and appends the reply to the history as the agent would; it returns the
// reply as the agent read it.
func pfTurn(t *testing.T, a *kit.Agent, stream bool) kit.Reply {
	t.Helper()
	a.Request.Stream = stream
	resp, body := a.Post(t)
	require.Equal(t, 200, resp.StatusCode, string(body))
	if !stream {
		r, err := a.D.ParseReply(body)
		require.NoError(t, err)
		return r
	}
	r, err := a.D.ParseStream(body)
	require.NoError(t, err, string(body))
	a.History = append(a.History, pfStreamEcho(t, a.D, r))
	return r
}

// pfStreamEcho is a streamed reply (its text and calls) as the history
// item an SDK's accumulator sends back.
func pfStreamEcho(t *testing.T, d kit.Driver, r kit.Reply) string {
	t.Helper()
	var parts []string
	switch d.Name() {
	case "anthropic":
		if r.Text != "" {
			parts = append(parts, `{"type":"text","text":`+kit.Quote(r.Text)+`}`)
		}
		for _, c := range r.Calls {
			parts = append(parts, `{"type":"tool_use","id":`+kit.Quote(c.ID)+`,"name":`+kit.Quote(c.Name)+`,"input":`+c.Args+`}`)
		}
		return `{"role":"assistant","content":[` + strings.Join(parts, ",") + `]}`
	case "openai_chat":
		content := "null"
		if r.Text != "" {
			content = kit.Quote(r.Text)
		}
		for _, c := range r.Calls {
			parts = append(parts, `{"id":`+kit.Quote(c.ID)+`,"type":"function","function":{"name":`+kit.Quote(c.Name)+`,"arguments":`+kit.Quote(c.Args)+`}}`)
		}
		calls := ""
		if len(parts) > 0 {
			calls = `,"tool_calls":[` + strings.Join(parts, ",") + `]`
		}
		return `{"role":"assistant","content":` + content + calls + `}`
	case "openai_responses":
		if r.Text != "" {
			parts = append(parts, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":`+kit.Quote(r.Text)+`}]}`)
		}
		for _, c := range r.Calls {
			parts = append(parts, `{"type":"function_call","call_id":`+kit.Quote(c.ID)+`,"name":`+kit.Quote(c.Name)+`,"arguments":`+kit.Quote(c.Args)+`}`)
		}
		return strings.Join(parts, ",")
	case "gemini":
		if r.Text != "" {
			parts = append(parts, `{"text":`+kit.Quote(r.Text)+`}`)
		}
		for _, c := range r.Calls {
			parts = append(parts, `{"functionCall":{"id":`+kit.Quote(c.ID)+`,"name":`+kit.Quote(c.Name)+`,"args":`+c.Args+`}}`)
		}
		return `{"role":"model","parts":[` + strings.Join(parts, ",") + `]}`
	}
	t.Fatalf("no stream echo for %s", d.Name())
	return ""
}

// pfAppendOnly checks that every upstream request extends the one
// before it.
func pfAppendOnly(t *testing.T, d kit.Driver, bodies [][]byte) {
	t.Helper()
	for i := 1; i < len(bodies); i++ {
		require.Equal(t, -1, kit.PrefixBreak(d, bodies[i-1], bodies[i]), "request %d extends request %d", i, i-1)
	}
}

// pfHistory is the raw elements of an upstream body's conversation.
func pfHistory(d kit.Driver, body []byte) []string {
	return kit.RawList(gjson.GetBytes(body, d.HistoryPath()))
}

// proseSession runs the prose scenario on a rig: a prompt answered with a
// call; its result answered with prose and no call (detected: instead of
// tools); a new prompt answered with prose and a call (a prompt's turn:
// not judged); its result answered with prose before a call (detected:
// before tools); that call's result answered briefly. It returns the
// upstream bodies.
func proseSession(t *testing.T, r *rig, d kit.Driver, stream bool, header map[string]string) [][]byte {
	t.Helper()
	a := kit.NewAgent(d, r.URL, header)
	read := func(id string) mock.ToolCall { return mock.ToolCall{ID: id, Name: "Read", Args: `{"path":"a.go"}`} }

	r.Mock.Script(mock.Reply{Text: "Let me read it.", ToolCalls: []mock.ToolCall{read("call_1")}})
	a.User("fix the failing test")
	require.Len(t, pfTurn(t, a, stream).Calls, 1)

	r.Mock.Script(mock.Reply{Text: longProse})
	a.ToolResult("call_1", "Read", "package a")
	require.Equal(t, longProse, pfTurn(t, a, stream).Text)

	r.Mock.Script(mock.Reply{Text: longProse, ToolCalls: []mock.ToolCall{read("call_2")}})
	a.User("go on and fix it")
	pfTurn(t, a, stream)

	r.Mock.Script(mock.Reply{Text: longProse, ToolCalls: []mock.ToolCall{read("call_3")}})
	a.ToolResult("call_2", "Read", "package a // 2")
	pfTurn(t, a, stream)

	r.Mock.Script(mock.Reply{Text: "Fixed."})
	a.ToolResult("call_3", "Read", "package a // 3")
	require.Equal(t, "Fixed.", pfTurn(t, a, stream).Text)

	bodies := r.upstreamBodies()
	require.Len(t, bodies, 5)
	return bodies
}

func proseOn(enabled hooks.OptIn, nudge prose.Nudge) func(*config.Config) {
	return func(c *config.Config) { c.Prose.Enabled, c.Prose.Nudge = enabled, nudge }
}

// TestProseDetectedAndNudgedOnce: on every API, streamed and not, both
// kinds of prose are detected (event and metric), the nudge goes out once,
// on the next tool-loop request, at the end of its newest user turn, and
// is replayed byte for byte after; the upstream view stays append-only.
func TestProseDetectedAndNudgedOnce(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", d.Name(), stream), func(t *testing.T) {
				r := newRig(t, rigOptions{Configure: proseOn(hooks.OptInOn, prose.NudgeOnce)})
				bodies := proseSession(t, r, d, stream, map[string]string{"X-Session-Id": "prose-" + d.Name()})

				evs := r.Events.Of(events.ProseDetected)
				require.Len(t, evs, 2)
				require.Equal(t, map[string]any{"kind": "instead_of_tools", "words": 45, "calls": 0, "nudged": true}, evs[0].Data)
				require.Equal(t, map[string]any{"kind": "before_tools", "words": 45, "calls": 1, "nudged": false}, evs[1].Data)
				require.Equal(t, "prose-"+d.Name(), evs[0].Session)

				m := r.metrics(t)
				require.Equal(t, 1.0, m.Value("shepherd_prose_replies_total", `kind="instead_of_tools"`))
				require.Equal(t, 1.0, m.Value("shepherd_prose_replies_total", `kind="before_tools"`))
				require.Equal(t, 1.0, m.Value("shepherd_prose_nudges_total"))

				nudge := kit.Quote(prose.DefaultNudgeText)
				for i, b := range bodies {
					want := 0
					if i >= 3 {
						want = 1
					}
					require.Equal(t, want, strings.Count(string(b), nudge), "request %d carries the nudge %d times", i, want)
				}
				// The nudge closes the newest user turn of the request that
				// carried it (after the tool result), and stays where it was.
				h3 := pfHistory(d, bodies[3])
				last := h3[len(h3)-1]
				require.True(t, strings.HasSuffix(d.ItemText(last), prose.DefaultNudgeText), "the nudge ends the newest user turn: %s", last)
				resultAt := slices.IndexFunc(h3, func(item string) bool { return strings.Contains(item, "package a // 2") })
				require.GreaterOrEqual(t, resultAt, len(h3)-2, "the nudge follows the tool result it comes with")
				h4 := pfHistory(d, bodies[4])
				require.Equal(t, last, h4[len(h3)-1], "replayed byte for byte")
				require.NotContains(t, h4[len(h4)-1], nudge)
				pfAppendOnly(t, d, bodies)
			})
		}
	}
}

// TestProseHeaderOptIn: with enabled header, only the requests naming
// prose in X-Shepherd-Features are judged and nudged.
func TestProseHeaderOptIn(t *testing.T) {
	d := kit.Drivers()[0]
	r := newRig(t, rigOptions{Configure: proseOn(hooks.OptInHeader, prose.NudgeOnce)})
	proseSession(t, r, d, false, map[string]string{"X-Session-Id": "prose-no-header"})
	require.Empty(t, r.Events.Of(events.ProseDetected))
	require.NotContains(t, string(r.upstreamBodies()[3]), kit.Quote(prose.DefaultNudgeText))

	r = newRig(t, rigOptions{Configure: proseOn(hooks.OptInHeader, prose.NudgeOnce)})
	bodies := proseSession(t, r, d, false, map[string]string{"X-Session-Id": "prose-header", hooks.FeaturesHeader: "format, Prose"})
	require.Len(t, r.Events.Of(events.ProseDetected), 2)
	require.Contains(t, string(bodies[3]), kit.Quote(prose.DefaultNudgeText))
	pfAppendOnly(t, d, bodies)
}

// TestProseOffChangesNothing: off (the default), or on without a nudge,
// the upstream requests are those of a proxy without the feature: byte
// for byte the same; off, nothing is reported either.
func TestProseOffChangesNothing(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			header := map[string]string{"X-Session-Id": "prose-off-" + d.Name()}
			off := newRig(t, rigOptions{})
			offBodies := proseSession(t, off, d, false, header)
			require.Empty(t, off.Events.Of(events.ProseDetected))
			require.False(t, off.metrics(t).Has("shepherd_prose_replies_total"))

			watch := newRig(t, rigOptions{Configure: proseOn(hooks.OptInOn, prose.NudgeOff)})
			watchBodies := proseSession(t, watch, d, false, header)
			require.Len(t, watch.Events.Of(events.ProseDetected), 2)
			require.Equal(t, offBodies, watchBodies, "detection alone changes no request")
		})
	}
}

// TestProseFollowUps: every upstream reply of a tool-loop turn is judged,
// the follow-ups shepherd sends after answering a call itself included,
// and the nudge is queued once; a turn that opened with a prompt is not
// judged in any of its rounds.
func TestProseFollowUps(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, rigOptions{Configure: proseOn(hooks.OptInOn, prose.NudgeOnce)})
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "prose-followups-" + d.Name()})
			topic := func(id, title string) mock.ToolCall {
				return mock.ToolCall{ID: id, Name: "create_new_topic", Args: `{"title":"` + title + `"}`}
			}
			r.Mock.Script(
				mock.Reply{Text: longProse, ToolCalls: []mock.ToolCall{topic("call_t1", "Fix")}},
				mock.Reply{Text: longProse, ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "Read", Args: `{}`}}},
			)
			a.User("fix the failing test")
			require.Len(t, pfTurn(t, a, false).Calls, 1)
			require.Empty(t, r.Events.Of(events.ProseDetected), "a prompt's turn is not judged, its follow-up neither")

			r.Mock.Script(
				mock.Reply{Text: longProse, ToolCalls: []mock.ToolCall{topic("call_t2", "Docs")}},
				mock.Reply{Text: longProse},
			)
			a.ToolResult("call_1", "Read", "package a")
			pfTurn(t, a, false)
			require.Len(t, r.upstreamBodies(), 4)
			evs := r.Events.Of(events.ProseDetected)
			require.Len(t, evs, 2)
			require.Equal(t, map[string]any{"kind": "before_tools", "words": 45, "calls": 1, "nudged": true}, evs[0].Data)
			require.Equal(t, map[string]any{"kind": "instead_of_tools", "words": 45, "calls": 0, "nudged": false}, evs[1].Data)
			require.Equal(t, evs[0].RequestID, evs[1].RequestID, "one turn, two rounds")
		})
	}
}

// TestProseNudgeOnRedis: the nudge's slot round-trips through Redis (the
// store that serialises sessions): detected on one request, sent once on
// the next tool-loop request, never again.
func TestProseNudgeOnRedis(t *testing.T) {
	url := kit.RedisURL(t)
	st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: fmt.Sprintf("prose-test-%d", time.Now().UnixNano()),
		TTL: time.Minute, Timeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	d := kit.Drivers()[0]
	r := newRig(t, rigOptions{Store: st, Configure: proseOn(hooks.OptInOn, prose.NudgeOnce)})
	bodies := proseSession(t, r, d, true, map[string]string{"X-Session-Id": "prose-redis"})
	for i, b := range bodies {
		want := 0
		if i >= 3 {
			want = 1
		}
		require.Equal(t, want, strings.Count(string(b), kit.Quote(prose.DefaultNudgeText)), "request %d", i)
	}
	pfAppendOnly(t, d, bodies)
}
