package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
)

// topicAPI adapts the multi-turn topic scenario to one wire API: how an
// agent builds its request, reads the reply, and echoes the reply back as
// history (what the official SDKs do with a reply).
type topicAPI struct {
	name, path string
	headers    map[string]string
	// history is the JSON path of the conversation array; static lists the
	// paths that must stay byte-identical on every request of a session.
	history string
	static  []string
	request func(items []string) string
	user    func(text string) string
	// toolResult is the agent's result for one of its own calls.
	toolResult func(id, name string) string
	echo       func(reply []byte) []string
	text       func(reply []byte) string
	calls      func(reply []byte) []string
	ids        func(reply []byte) []string
}

func rawList(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool { out = append(out, v.Raw); return true })
	return out
}

func topicAPIs() []topicAPI {
	return []topicAPI{
		{
			name: "anthropic", path: "/v1/messages", headers: anthropicHeaders(),
			history: "messages", static: []string{"tools", "system"},
			request: func(items []string) string {
				return `{"model":"claude-test","max_tokens":512,"system":"You are terse.",` +
					`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object"}}],` +
					`"messages":[` + strings.Join(items, ",") + `]}`
			},
			user: func(t string) string { return fmt.Sprintf(`{"role":"user","content":%q}`, t) },
			toolResult: func(id, _ string) string {
				return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}`
			},
			echo: func(r []byte) []string {
				return []string{`{"role":"assistant","content":` + gjson.GetBytes(r, "content").Raw + `}`}
			},
			text: func(r []byte) string {
				var b strings.Builder
				for _, c := range gjson.GetBytes(r, `content.#(type=="text")#.text`).Array() {
					b.WriteString(c.String())
				}
				return b.String()
			},
			calls: func(r []byte) []string {
				return strs(gjson.GetBytes(r, `content.#(type=="tool_use")#.name`))
			},
			ids: func(r []byte) []string { return strs(gjson.GetBytes(r, `content.#(type=="tool_use")#.id`)) },
		},
		{
			name: "openai_chat", path: "/v1/chat/completions", headers: openaiHeaders(),
			history: "messages", static: []string{"tools"},
			request: func(items []string) string {
				return `{"model":"gpt-test","tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}],` +
					`"messages":[{"role":"system","content":"You are terse."},` + strings.Join(items, ",") + `]}`
			},
			user:       func(t string) string { return fmt.Sprintf(`{"role":"user","content":%q}`, t) },
			toolResult: func(id, _ string) string { return `{"role":"tool","tool_call_id":"` + id + `","content":"ok"}` },
			echo: func(r []byte) []string {
				return []string{gjson.GetBytes(r, "choices.0.message").Raw}
			},
			text: func(r []byte) string { return gjson.GetBytes(r, "choices.0.message.content").String() },
			calls: func(r []byte) []string {
				return strs(gjson.GetBytes(r, "choices.0.message.tool_calls.#.function.name"))
			},
			ids: func(r []byte) []string { return strs(gjson.GetBytes(r, "choices.0.message.tool_calls.#.id")) },
		},
		{
			name: "openai_responses", path: "/v1/responses", headers: openaiHeaders(),
			history: "input", static: []string{"tools", "instructions"},
			request: func(items []string) string {
				return `{"model":"gpt-test","instructions":"You are terse.","store":false,` +
					`"tools":[{"type":"function","name":"Read","parameters":{"type":"object"}}],` +
					`"input":[` + strings.Join(items, ",") + `]}`
			},
			user: func(t string) string { return fmt.Sprintf(`{"role":"user","content":%q}`, t) },
			toolResult: func(id, _ string) string {
				return `{"type":"function_call_output","call_id":"` + id + `","output":"ok"}`
			},
			echo: func(r []byte) []string { return rawList(gjson.GetBytes(r, "output")) },
			text: func(r []byte) string {
				var b strings.Builder
				for _, c := range gjson.GetBytes(r, `output.#(type=="message")#.content`).Array() {
					for _, p := range c.Array() {
						b.WriteString(p.Get("text").String())
					}
				}
				return b.String()
			},
			calls: func(r []byte) []string {
				return strs(gjson.GetBytes(r, `output.#(type=="function_call")#.name`))
			},
			ids: func(r []byte) []string { return strs(gjson.GetBytes(r, `output.#(type=="function_call")#.call_id`)) },
		},
		{
			name: "gemini", path: "/v1beta/models/gemini-test:generateContent", headers: geminiHeaders(),
			history: "contents", static: []string{"tools", "systemInstruction"},
			request: func(items []string) string {
				return `{"systemInstruction":{"parts":[{"text":"You are terse."}]},` +
					`"tools":[{"functionDeclarations":[{"name":"Read","parameters":{"type":"object"}}]}],` +
					`"contents":[` + strings.Join(items, ",") + `]}`
			},
			user: func(t string) string { return fmt.Sprintf(`{"role":"user","parts":[{"text":%q}]}`, t) },
			toolResult: func(id, name string) string {
				return `{"role":"user","parts":[{"functionResponse":{"id":"` + id + `","name":"` + name + `","response":{"content":"ok"}}}]}`
			},
			echo: func(r []byte) []string { return []string{gjson.GetBytes(r, "candidates.0.content").Raw} },
			text: func(r []byte) string {
				var b strings.Builder
				for _, p := range gjson.GetBytes(r, "candidates.0.content.parts").Array() {
					if !p.Get("thought").Bool() {
						b.WriteString(p.Get("text").String())
					}
				}
				return b.String()
			},
			calls: func(r []byte) []string {
				return strs(gjson.GetBytes(r, "candidates.0.content.parts.#.functionCall.name"))
			},
			ids: func(r []byte) []string {
				return strs(gjson.GetBytes(r, "candidates.0.content.parts.#.functionCall.id"))
			},
		},
	}
}

func strs(r gjson.Result) []string {
	out := []string{}
	for _, v := range r.Array() {
		out = append(out, v.String())
	}
	return out
}

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
