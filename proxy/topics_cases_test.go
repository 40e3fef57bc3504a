package proxy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestTopicsAgentDeclaresTool: an agent that has its own create_new_topic
// gets nothing injected and runs the tool itself; shepherd moves the call
// first and still records the chapter.
func TestTopicsAgentDeclaresTool(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
	h.mock.Script(mock.Reply{ToolCalls: []mock.ToolCall{
		{ID: "r1", Name: "Read", Args: `{"path":"a.go"}`},
		{ID: "t1", Name: "create_new_topic", Args: `{"title":"Research"}`},
	}})
	hdr := anthropicHeaders()
	hdr["X-Session-Id"] = "own-tool"
	body := `{"model":"m","max_tokens":100,"tools":[{"name":"Read","input_schema":{"type":"object"}},` +
		`{"name":"create_new_topic","input_schema":{"type":"object","properties":{"title":{"type":"string"}}}}],` +
		`"messages":[{"role":"user","content":"go"}]}`
	resp, reply := do(t, "POST", h.URL+"/v1/messages", body, hdr)
	require.Equal(t, 200, resp.StatusCode, string(reply))
	got, _ := h.mock.Last()
	require.Equal(t, body, string(got.Body), "nothing injected for an agent that has the tool")
	require.Equal(t, []string{"create_new_topic", "Read"}, strs(gjson.GetBytes(reply, `content.#(type=="tool_use")#.name`)),
		"the agent receives its topic call, moved first")
	require.Len(t, h.mock.Requests(), 1, "no follow-up: the agent answers its own call")
	sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantOfHarness(t, h, "own-tool"), Session: "own-tool"})
	require.NoError(t, err)
	require.Equal(t, "Research", topicsOf(t, sess).Topic)
}

// TestTopicsTwoCallsOneTurn: two topic calls in one reply are both answered
// (in order) before the follow-up; the last one is the active topic.
func TestTopicsTwoCallsOneTurn(t *testing.T) {
	for _, api := range topicAPIs() {
		t.Run(api.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
			h.mock.Script(
				mock.Reply{ID: "x1", ToolCalls: []mock.ToolCall{
					{ID: "t1", Name: "create_new_topic", Args: `{"title":"Research"}`},
					{ID: "t2", Name: "create_new_topic", Args: `{"title":"Strategy"}`},
				}},
				mock.Reply{ID: "x2", Text: "Planned."},
			)
			hdr := map[string]string{"X-Session-Id": "two-" + api.name}
			for k, v := range api.headers {
				hdr[k] = v
			}
			resp, reply := do(t, "POST", h.URL+api.path, api.request([]string{api.user("plan it")}), hdr)
			require.Equal(t, 200, resp.StatusCode, string(reply))
			require.Equal(t, "Planned.", api.text(reply))
			require.Empty(t, api.calls(reply))
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			follow := string(reqs[1].Body)
			first := strings.Index(follow, `Topic changed to: \"Research\"`)
			second := strings.Index(follow, `Topic changed to: \"Strategy\"`)
			require.True(t, first >= 0 && second > first, "both results, in call order")
			sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantOfHarness(t, h, "two-"+api.name), Session: "two-" + api.name})
			require.NoError(t, err)
			require.Equal(t, "Strategy", topicsOf(t, sess).Topic)
			require.Len(t, topicsOf(t, sess).Chapters, 2)
		})
	}
}

// TestTopicsStatefulResponsesPassThrough: with previous_response_id the
// history lives upstream, so shepherd leaves the request and reply alone.
func TestTopicsStatefulResponsesPassThrough(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
	h.mock.Script(mock.Reply{ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"X"}`}}})
	body := `{"model":"m","previous_response_id":"resp_prev","input":[{"role":"user","content":"go on"}]}`
	resp, reply := do(t, "POST", h.URL+"/v1/responses", body, openaiHeaders())
	require.Equal(t, 200, resp.StatusCode)
	got, _ := h.mock.Last()
	require.Equal(t, body, string(got.Body))
	require.Len(t, h.mock.Requests(), 1)
	require.Contains(t, string(reply), "create_new_topic", "the reply is the upstream's, untouched")
}
