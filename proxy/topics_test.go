package proxy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// topicAPI is a kit wire driver as the multi-turn scenarios use it: the
// usual request (system prompt, the Read tool), the agent's result "ok",
// and the reply read as text, call names and call ids.
type topicAPI struct {
	d          kit.Driver
	name, path string
	headers    map[string]string
	// history is the JSON path of the conversation array; static lists the
	// paths that must stay byte-identical on every request of a session.
	history string
	static  []string
}

func newTopicAPI(d kit.Driver) topicAPI {
	return topicAPI{d: d, name: d.Name(), path: d.Path("", false), headers: d.Headers(), history: d.HistoryPath(), static: d.StaticPaths()}
}

func topicAPIs() []topicAPI {
	var out []topicAPI
	for _, d := range kit.Drivers() {
		out = append(out, newTopicAPI(d))
	}
	return out
}

// request is the scenarios' request with history items.
func (a topicAPI) request(items []string) string {
	return a.d.Request(kit.Request{System: "You are terse.", Tools: []kit.Tool{kit.ReadTool}, History: items})
}

func (a topicAPI) user(text string) string { return a.d.User(text) }

// toolResult is the agent's result "ok" for one of its own calls.
func (a topicAPI) toolResult(id, name string) string { return a.d.ToolResult(id, name, "ok") }

// echo is the reply as the history items an official SDK sends back.
func (a topicAPI) echo(reply []byte) []string { return a.d.Echo(reply) }

// parse reads a reply; an unreadable one reads as empty.
func (a topicAPI) parse(reply []byte) kit.Reply {
	r, _ := a.d.ParseReply(reply)
	return r
}

func (a topicAPI) text(reply []byte) string { return a.parse(reply).Text }

// calls are the names of the reply's tool calls (never nil).
func (a topicAPI) calls(reply []byte) []string {
	out := []string{}
	for _, c := range a.parse(reply).Calls {
		out = append(out, c.Name)
	}
	return out
}

// ids are the ids of the reply's tool calls (never nil).
func (a topicAPI) ids(reply []byte) []string {
	out := []string{}
	for _, c := range a.parse(reply).Calls {
		out = append(out, c.ID)
	}
	return out
}

func rawList(r gjson.Result) []string { return kit.RawList(r) }

func strs(r gjson.Result) []string { return kit.Strings(r) }

// requireAppendOnly asserts that next extends prev: the static parts are
// byte-identical and every element of prev's history is byte-identical at
// the same position in next's.
func requireAppendOnly(t *testing.T, api topicAPI, prev, next []byte) {
	t.Helper()
	for _, p := range api.static {
		require.Equal(t, gjson.GetBytes(prev, p).Raw, gjson.GetBytes(next, p).Raw, "%s changed between requests", p)
	}
	ph, nh := rawList(gjson.GetBytes(prev, api.history)), rawList(gjson.GetBytes(next, api.history))
	require.GreaterOrEqual(t, len(nh), len(ph), "history shrank")
	for i := range ph {
		require.Equal(t, ph[i], nh[i], "history item %d changed", i)
	}
}

// TestTopicsSessionAllAPIs drives three turns of one session per API:
//  1. the model opens a chapter alone: shepherd answers, follows up and
//     merges; the agent sees only the follow-up's text;
//  2. the model opens a chapter and calls an agent tool: the agent sees only
//     its own call;
//  3. the agent returns its result: the model's view is restored (topic call
//     and shepherd's result put back, first) and every request extends the
//     previous one byte for byte.
func TestTopicsSessionAllAPIs(t *testing.T) {
	for _, api := range topicAPIs() {
		t.Run(api.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
			hdr := map[string]string{"X-Session-Id": "topics-" + api.name}
			for k, v := range api.headers {
				hdr[k] = v
			}
			h.mock.Script(
				mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Research"}`}}},
				mock.Reply{ID: "r2", Text: "Looking around."},
				mock.Reply{ID: "r3", ToolCalls: []mock.ToolCall{
					{ID: "t2", Name: "create_new_topic", Args: `{"title":"Implementing Fix"}`},
					{ID: "c1", Name: "Read", Args: `{"path":"main.go"}`},
				}},
				mock.Reply{ID: "r4", Text: "Fixed."},
			)

			// Turn 1.
			history := []string{api.user("fix the bug")}
			resp, reply := do(t, "POST", h.URL+api.path, api.request(history), hdr)
			require.Equal(t, 200, resp.StatusCode, string(reply))
			require.Equal(t, "Looking around.", api.text(reply))
			require.Empty(t, api.calls(reply), "the agent never sees create_new_topic")
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2, "one follow-up")
			r1, r2 := reqs[0].Body, reqs[1].Body
			require.Contains(t, gjson.GetBytes(r1, "tools").Raw, "create_new_topic")
			require.Contains(t, string(r1), "[Active Topic: none yet]")
			require.Contains(t, string(r1), "Organise your work into logical chapters")
			requireAppendOnly(t, api, r1, r2)
			require.Contains(t, string(r2), `Topic changed to: \"Research\"`)

			// Turn 2.
			history = append(history, api.echo(reply)...)
			history = append(history, api.user("now fix it"))
			resp, reply = do(t, "POST", h.URL+api.path, api.request(history), hdr)
			require.Equal(t, 200, resp.StatusCode, string(reply))
			require.Equal(t, []string{"Read"}, api.calls(reply), "only the agent's own call")
			reqs = h.mock.Requests()
			require.Len(t, reqs, 3)
			r3 := reqs[2].Body
			requireAppendOnly(t, api, r2, r3)
			require.Contains(t, string(r3), "Looking around.")
			require.Contains(t, string(r3), "[Active Topic: Research]")

			// Turn 3.
			history = append(history, api.echo(reply)...)
			history = append(history, api.toolResult("c1", "Read"))
			resp, reply = do(t, "POST", h.URL+api.path, api.request(history), hdr)
			require.Equal(t, 200, resp.StatusCode, string(reply))
			require.Equal(t, "Fixed.", api.text(reply))
			reqs = h.mock.Requests()
			require.Len(t, reqs, 4)
			r4 := reqs[3].Body
			requireAppendOnly(t, api, r3, r4)
			tail := string(r4[strings.Index(string(r4), "now fix it"):])
			topicResult := strings.Index(tail, `Topic changed to: \"Implementing Fix\"`)
			agentResult := strings.Index(tail, `"ok"`)
			require.GreaterOrEqual(t, topicResult, 0, "shepherd's result is restored in the model's view")
			require.Less(t, topicResult, agentResult, "shepherd's result comes first among the tool results")
			topicCall := strings.Index(tail, `"name":"create_new_topic"`)
			require.GreaterOrEqual(t, topicCall, 0, "the topic call is back in the model's history")
			require.Less(t, topicCall, topicResult, "the call comes before its result")
			require.Contains(t, tail, "[Active Topic: Implementing Fix]")

			sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantFor(t, h, api), Session: "topics-" + api.name})
			require.NoError(t, err)
			require.Equal(t, "Implementing Fix", topicsOf(t, sess).Topic)
			require.Len(t, topicsOf(t, sess).Chapters, 2)
			require.Equal(t, "Research", topicsOf(t, sess).Chapters[0].Title)
			require.Equal(t, "Implementing Fix", topicsOf(t, sess).Chapters[1].Title)
			require.Len(t, topicsOf(t, sess).Chapters[1].Calls, 1)
			require.Equal(t, "Read", topicsOf(t, sess).Chapters[1].Calls[0].Name)
		})
	}
}

// tenantFor finds the tenant of the only session the harness's store has.
func tenantFor(t *testing.T, h *harness, api topicAPI) string {
	t.Helper()
	list, err := h.store.List(t.Context(), "", 10)
	require.NoError(t, err)
	for _, s := range list {
		if s.ID == "topics-"+api.name {
			return s.Tenant
		}
	}
	t.Fatalf("session of %s not found", api.name)
	return ""
}
