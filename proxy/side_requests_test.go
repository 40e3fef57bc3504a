package proxy_test

// Side requests (title and summary calls without tools, tool_choice none,
// JSON-mode calls) go upstream with no tool, rule or reminder added, are
// counted, and leave the session alone; features.side_requests inject
// treats them like any request.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// sideRequestBodies are the side requests of one API: its agent-turn body
// without tools, and with tools but a constraint that makes it a side
// request, keyed by the kind shepherd_side_requests_total counts.
func sideRequestBodies(t *testing.T, api topicAPI) map[string]string {
	t.Helper()
	turn := api.request([]string{api.user("Generate a short title for this conversation.")})
	noTools, err := sjson.Delete(turn, "tools")
	require.NoError(t, err)
	out := map[string]string{"no_tools": noTools}
	kind, path, value := api.d.SideRequest()
	out[kind], err = sjson.SetRaw(turn, path, value)
	require.NoError(t, err)
	return out
}

func TestSideRequestsPassUntouched(t *testing.T) {
	for _, api := range topicAPIs() {
		t.Run(api.name, func(t *testing.T) {
			dir := intentWorkspace(t, intentPolicy("INT-001"))
			h := newIntentHarness(t, dir)
			bodies := sideRequestBodies(t, api)
			hdr := map[string]string{"X-Session-Id": "side-" + api.name}
			for k, v := range api.headers {
				hdr[k] = v
			}
			for kind, body := range bodies {
				h.mock.Script(mock.Reply{ID: "t-" + kind, Text: `{"title":"Login fix"}`})
				resp, got := do(t, "POST", h.URL+api.path, body, hdr)
				require.Equal(t, 200, resp.StatusCode, string(got))
				require.Contains(t, api.text(got), "Login fix")
				reqs := h.mock.Requests()
				up := reqs[len(reqs)-1].Body
				require.Equal(t, gjson.Get(body, "tools").Raw, gjson.GetBytes(up, "tools").Raw, "%s: no tool is added", kind)
				for _, injected := range []string{intents.IntentTool, intents.IntentRule, "create_new_topic", "[Active Intent", "[Active Topic"} {
					require.NotContains(t, string(up), injected, "%s: nothing is injected", kind)
				}
				require.Equal(t, gjson.Get(body, api.history).Raw, gjson.GetBytes(up, api.history).Raw, "%s: the conversation is untouched", kind)
				require.Equal(t, 1.0, metricValue(t, h, "shepherd_side_requests_total", `kind="`+kind+`",route="`+api.d.Route(false)+`"`))
			}
			list, err := h.store.List(t.Context(), "", 100)
			require.NoError(t, err)
			require.Empty(t, list, "side requests neither create nor touch a session")

			// The agent's next turn is the session's first: it starts under
			// the policy's current intent.
			h.mock.Script(mock.Reply{ID: "turn", Text: "On it."})
			a := &rawIntentAgent{a: kit.NewAgent(api.d, h.URL, hdr)}
			a.user("fix the login bug")
			require.Equal(t, "On it.", a.send(t).text)
			reqs := h.mock.Requests()
			last := reqs[len(reqs)-1].Body
			require.Contains(t, gjson.GetBytes(last, "tools").Raw, intents.IntentTool)
			require.Contains(t, lastHistoryItem(api, last), "[Active Intent: INT-001")
		})
	}
}

func TestSideRequestsInject(t *testing.T) {
	for _, api := range topicAPIs() {
		t.Run(api.name, func(t *testing.T) {
			dir := intentWorkspace(t, intentPolicy("INT-001"))
			h := newIntentHarness(t, dir, func(c *config.Config) { c.Features.SideRequests = config.SideRequestsInject })
			hdr := map[string]string{"X-Session-Id": "inject-" + api.name}
			for k, v := range api.headers {
				hdr[k] = v
			}
			h.mock.Script(mock.Reply{ID: "t", Text: "Title"})
			resp, got := do(t, "POST", h.URL+api.path, sideRequestBodies(t, api)["no_tools"], hdr)
			require.Equal(t, 200, resp.StatusCode, string(got))
			up := h.mock.Requests()[0].Body
			require.Contains(t, gjson.GetBytes(up, "tools").Raw, intents.IntentTool)
			require.True(t, strings.Contains(string(up), "[Active Intent:"), "the reminder is injected")
			require.Equal(t, 0.0, metricValue(t, h, "shepherd_side_requests_total", `kind="no_tools",route="`+api.d.Route(false)+`"`))
		})
	}
}
