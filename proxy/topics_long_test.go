package proxy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// scriptTurn scripts the mock replies of turn k of the long session, cycling
// through every shape the turn engine handles: a topic call alone (answered
// by shepherd, then a follow-up), a topic call beside an agent call (the
// agent sees only its own), plain text, and an agent call alone.
func scriptTurn(m *mock.Server, k int) {
	title := fmt.Sprintf("Phase %d", k)
	switch k % 4 {
	case 0:
		m.Script(
			mock.Reply{ID: fmt.Sprintf("a%d", k), ToolCalls: []mock.ToolCall{{ID: fmt.Sprintf("t%d", k), Name: "create_new_topic", Args: `{"title":"` + title + `"}`}}},
			mock.Reply{ID: fmt.Sprintf("b%d", k), Text: fmt.Sprintf("Starting %s.", title)},
		)
	case 1:
		m.Script(mock.Reply{ID: fmt.Sprintf("a%d", k), ToolCalls: []mock.ToolCall{
			{ID: fmt.Sprintf("c%d", k), Name: "Read", Args: fmt.Sprintf(`{"path":"f%d.go"}`, k)},
			{ID: fmt.Sprintf("t%d", k), Name: "create_new_topic", Args: `{"title":"` + title + `"}`},
		}})
	case 2:
		m.Script(mock.Reply{ID: fmt.Sprintf("a%d", k), Text: fmt.Sprintf("Read it (%d).", k)})
	case 3:
		m.Script(mock.Reply{ID: fmt.Sprintf("a%d", k), ToolCalls: []mock.ToolCall{{ID: fmt.Sprintf("c%d", k), Name: "Read", Args: `{"path":"x.go"}`}}})
	}
}

// TestTopicsTwentyTurnsAppendOnly drives a 20-turn session per API and
// checks the central promise: every upstream request of the session extends
// the previous one byte for byte (tools and system identical, every earlier
// history item identical), while the agent never receives create_new_topic.
func TestTopicsTwentyTurnsAppendOnly(t *testing.T) {
	for _, api := range topicAPIs() {
		t.Run(api.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
			hdr := map[string]string{"X-Session-Id": "long-" + api.name}
			for k, v := range api.headers {
				hdr[k] = v
			}
			hitsBefore := metricValue(t, h, "shepherd_view_cache_lookups_total", `result="hit"`)
			history := []string{api.user("start the task")}
			for k := 0; k < 20; k++ {
				scriptTurn(h.mock, k)
				resp, reply := do(t, "POST", h.URL+api.path, api.request(history), hdr)
				require.Equal(t, 200, resp.StatusCode, "turn %d: %s", k, reply)
				require.NotContains(t, api.calls(reply), "create_new_topic", "turn %d", k)
				history = append(history, api.echo(reply)...)
				names, ids := api.calls(reply), api.ids(reply)
				require.Len(t, ids, len(names), "turn %d", k)
				if len(names) == 0 {
					history = append(history, api.user(fmt.Sprintf("continue %d", k)))
					continue
				}
				for i := range names {
					history = append(history, api.toolResult(ids[i], names[i]))
				}
			}
			reqs := h.mock.Requests()
			require.Len(t, reqs, 25, "20 turns plus one follow-up for each of the 5 lone topic calls")
			for i := 1; i < len(reqs); i++ {
				requireAppendOnly(t, api, reqs[i-1].Body, reqs[i].Body)
			}
			last := reqs[len(reqs)-1].Body
			require.Equal(t, 10, countResults(string(last), "Topic changed to:"), "every topic result stays in the model's history")
			require.Contains(t, string(last), "[Active Topic: Phase 17]")

			sess, err := h.store.Get(t.Context(), state.Key{Tenant: tenantOfHarness(t, h, "long-"+api.name), Session: "long-" + api.name})
			require.NoError(t, err)
			require.Len(t, topicsOf(t, sess).Chapters, 10)
			require.Equal(t, "Phase 17", topicsOf(t, sess).Topic)
			require.Equal(t, int64(20), sess.Requests)
			require.Positive(t, metricValue(t, h, "shepherd_ledger_entries_total", `result="applied"`))
			require.Equal(t, 10.0, metricValue(t, h, "shepherd_topic_changes_total", ""))
			require.Equal(t, 5.0, metricValue(t, h, "shepherd_followups_total", `route="`+routeOf(api)+`"`))
			// Each request resends the history: its messages come from the
			// view cache (the counter is process-wide, so only a floor).
			require.GreaterOrEqual(t, metricValue(t, h, "shepherd_view_cache_lookups_total", `result="hit"`)-hitsBefore, 20.0)
		})
	}
}

func countResults(s, sub string) int {
	n := 0
	for i := 0; ; {
		j := indexFrom(s, sub, i)
		if j < 0 {
			return n
		}
		n++
		i = j + len(sub)
	}
}

func indexFrom(s, sub string, from int) int {
	if from > len(s) {
		return -1
	}
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func tenantOfHarness(t *testing.T, h *harness, id string) string {
	t.Helper()
	list, err := h.store.List(t.Context(), "", 100)
	require.NoError(t, err)
	for _, s := range list {
		if s.ID == id {
			return s.Tenant
		}
	}
	t.Fatalf("session %s not found", id)
	return ""
}

// metricValue reads the sample of metric name whose label set is exactly
// labels (e.g. `op="get"`; "" for none), 0 when absent.
func metricValue(t *testing.T, h *harness, name, labels string) float64 {
	t.Helper()
	return kit.Metrics(t, h.URL+"/metrics").Value(name, labels)
}

// TestTopicsStoreDownFailsOpen: when the session cannot be loaded, the
// request passes through without any injection and the agent is served.
func TestTopicsStoreDownFailsOpen(t *testing.T) {
	h := newHarness(t, harnessOptions{Store: &failingStore{}, Config: func(c *config.Config) { c.Topics.Enabled = true }})
	h.mock.Script(mock.Reply{Text: "fine"})
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	resp, b := do(t, "POST", h.URL+"/v1/messages", body, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode, string(b))
	got, _ := h.mock.Last()
	require.Equal(t, body, string(got.Body), "no injection without session state")
	require.Equal(t, "fine", gjson.GetBytes(b, "content.0.text").String())
	require.Equal(t, 1.0, metricValue(t, h, "shepherd_store_errors_total", `op="get"`))
}

// TestTopicsTwoReplicasShareRedis: a session's turns alternate between two
// shepherd processes sharing one Redis; each sees the topic and ledger the
// other wrote, so the model's view stays append-only.
func TestTopicsTwoReplicasShareRedis(t *testing.T) {
	url := kit.RedisURL(t)
	prefix := fmt.Sprintf("shepherd-topics-%d", time.Now().UnixNano())
	defer cleanupRedisPrefix(t, url, prefix)
	open := func() state.Store {
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		require.NoError(t, err)
		return st
	}
	api := topicAPIs()[0]
	a := newHarness(t, harnessOptions{Store: open(), Config: func(c *config.Config) { c.Topics.Enabled = true }})
	b := newHarness(t, harnessOptions{Store: open(), Config: func(c *config.Config) {
		c.Topics.Enabled = true
		c.Upstreams.Anthropic = a.mock.URL() // one provider behind both replicas
	}})
	hdr := map[string]string{"X-Session-Id": "shared-1"}
	for k, v := range api.headers {
		hdr[k] = v
	}
	history := []string{api.user("start")}
	for k, h := range []*harness{a, b, a, b} {
		scriptTurn(a.mock, k)
		resp, reply := do(t, "POST", h.URL+api.path, api.request(history), hdr)
		require.Equal(t, 200, resp.StatusCode, string(reply))
		history = append(history, api.echo(reply)...)
		names, ids := api.calls(reply), api.ids(reply)
		if len(names) == 0 {
			history = append(history, api.user(fmt.Sprintf("continue %d", k)))
		}
		for i := range names {
			history = append(history, api.toolResult(ids[i], names[i]))
		}
	}
	reqs := a.mock.Requests()
	require.Len(t, reqs, 5)
	for i := 1; i < len(reqs); i++ {
		requireAppendOnly(t, api, reqs[i-1].Body, reqs[i].Body)
	}
	require.Contains(t, string(reqs[4].Body), "[Active Topic: Phase 1]", "each replica sees the topic the other one set")
	_, got := do(t, "GET", b.URL+"/shepherd/v1/sessions/shared-1", "", nil)
	require.Equal(t, "Phase 1", gjson.GetBytes(got, "topic").String())
	require.Len(t, gjson.GetBytes(got, "chapters").Array(), 2)
}

// routeOf is the metric route label of api's non-streaming requests.
func routeOf(api topicAPI) string { return api.d.Route(false) }

// TestTopicsSlotIsBounded: a long session keeps at most topics.max_chapters
// chapters and topics.max_calls call notes, the newest, in the memory store
// and in Redis (where a turn adds to the stored chapters); the sessions
// API counts what was dropped.
func TestTopicsSlotIsBounded(t *testing.T) {
	for _, name := range []string{"memory", "redis"} {
		t.Run(name, func(t *testing.T) {
			var store state.Store // memory: the harness's own
			if name == "redis" {
				url := kit.RedisURL(t)
				prefix := fmt.Sprintf("shepherd-topics-bound-%d", time.Now().UnixNano())
				defer cleanupRedisPrefix(t, url, prefix)
				var err error
				store, err = state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
				require.NoError(t, err)
			}
			h := newHarness(t, harnessOptions{Store: store, Config: func(c *config.Config) {
				c.Topics.Enabled = true
				c.Topics.MaxChapters, c.Topics.MaxCalls = 2, 4
			}})
			api := topicAPIs()[0]
			hdr := map[string]string{"X-Session-Id": "bounded-" + name}
			for k, v := range api.headers {
				hdr[k] = v
			}
			history := []string{api.user("start")}
			calls, chapters := 0, 0
			for k := range 16 {
				scriptTurn(h.mock, k)
				if k%4 < 2 {
					chapters++
				}
				resp, reply := do(t, "POST", h.URL+api.path, api.request(history), hdr)
				require.Equal(t, 200, resp.StatusCode, string(reply))
				history = append(history, api.echo(reply)...)
				names, ids := api.calls(reply), api.ids(reply)
				calls += len(names)
				if len(names) == 0 {
					history = append(history, api.user(fmt.Sprintf("continue %d", k)))
				}
				for i := range names {
					history = append(history, api.toolResult(ids[i], names[i]))
				}
			}
			_, got := do(t, "GET", h.URL+"/shepherd/v1/sessions/bounded-"+name, "", nil)
			j := gjson.ParseBytes(got)
			kept := j.Get("chapters").Array()
			require.LessOrEqual(t, len(kept), 2, string(got))
			require.Equal(t, int64(chapters), j.Get("chapters_dropped").Int()+int64(len(kept)), string(got))
			require.Equal(t, "Phase 13", kept[len(kept)-1].Get("title").String())
			notes := j.Get("chapters.#.calls.#.id").Array()
			var ids []string
			for _, c := range notes {
				for _, id := range c.Array() {
					ids = append(ids, id.String())
				}
			}
			require.LessOrEqual(t, len(ids), 4)
			require.Equal(t, int64(calls), j.Get("calls_dropped").Int()+int64(len(ids)), string(got))
			require.Equal(t, "c15", ids[len(ids)-1], "the newest call is kept")
			require.Equal(t, int64(len(kept)), j.Get("counts.chapters").Int())
		})
	}
}
