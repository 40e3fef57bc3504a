package proxy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// routeSecret is the credential of the routed upstreams; the agent's own
// credentials are the kit drivers'.
const routeSecret = "sk-routed-upstream-secret"

// routeHarness is shepherd in front of two mock providers: main, the
// built-in upstream of every provider, and alt, the named upstream
// alt-<provider> of each, with its own credential from the environment.
type routeHarness struct {
	main, alt *mock.Server
	store     state.Store
	events    *events.Recorder
	metrics   *proxy.Metrics
	URL       string
}

func newRouteHarness(t *testing.T, rules []string, tweak func(*config.Config)) *routeHarness {
	t.Helper()
	t.Setenv("SHEPHERD_TEST_ROUTE_KEY", routeSecret)
	h := &routeHarness{main: kit.StartMock(t, mock.Options{}), alt: kit.StartMock(t, mock.Options{}), events: &events.Recorder{}}
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = h.main.URL(), h.main.URL(), h.main.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Topics.Enabled = true // its claimed calls make follow-ups
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	for _, fam := range []string{"anthropic", "openai", "gemini"} {
		cfg.Routing.Upstreams = append(cfg.Routing.Upstreams,
			"alt-"+fam+" api="+fam+" base_url="+h.alt.URL()+" credential_env=SHEPHERD_TEST_ROUTE_KEY")
	}
	cfg.Routing.Rules = rules
	if tweak != nil {
		tweak(&cfg)
	}
	require.NoError(t, cfg.Validate())
	h.store = state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	h.metrics = proxy.NewMetrics()
	log := zaptest.NewLogger(t)
	features, err := proxy.BuildFeatures(&cfg, h.metrics, log)
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: h.store, Metrics: h.metrics, Features: features, Events: h.events})
	require.NoError(t, err)
	h.URL = kit.Serve(t, srv, func() { _ = features.Close() }, func() { _ = h.store.Close() })
	return h
}

// requestedModel is the model a recorded upstream request names, where
// its API names it (Gemini: the path).
func requestedModel(t *testing.T, d kit.Driver, r mock.Recorded) string {
	t.Helper()
	api, err := apis.Lookup(d.Name())
	require.NoError(t, err)
	return api.RequestModel([]byte(r.Path), r.Body)
}

// requireRoutedCredential checks a request that reached a routed upstream
// carries the upstream's credential in the API's header and none of the
// agent's.
func requireRoutedCredential(t *testing.T, d kit.Driver, r mock.Recorded) {
	t.Helper()
	api, err := apis.Lookup(d.Name())
	require.NoError(t, err)
	require.Equal(t, api.Credential.Prefix+routeSecret, r.Header.Get(api.Credential.Header))
	for name, vals := range r.Header {
		for _, v := range vals {
			for _, agent := range d.Headers() {
				if strings.Contains(agent, "test") { // the kit's credentials: sk-ant-test, sk-test, g-test
					require.NotContains(t, v, agent, "the agent's credential reached the routed upstream in %s", name)
				}
			}
		}
	}
	require.NotContains(t, r.Query, "key=", "no query-string key")
}

func withHeaders(d kit.Driver, extra map[string]string) map[string]string {
	h := d.Headers()
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// A rule sends the request and its follow-up to the named upstream, with
// the rewritten model and the upstream's own credential; the main upstream
// sees nothing.
func TestRoutingToNamedUpstreamWithFollowUp(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			h := newRouteHarness(t, []string{"big model=big-* set_model=small-1 upstream=alt-" + provider(t, d)}, nil)
			h.alt.Script(
				mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "t1", Name: "create_new_topic", Args: `{"title":"Research"}`}}},
				mock.Reply{ID: "r2", Text: "Looking around."},
			)
			body := d.Request(kit.Request{Model: "big-model", Tools: []kit.Tool{kit.ReadTool}, History: []string{d.User("fix the bug")}})
			resp, reply := kit.Do(t, "POST", h.URL+d.Path("big-model", false), body, withHeaders(d, map[string]string{"X-Session-Id": "route-" + d.Name()}))
			require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
			got, err := d.ParseReply(reply)
			require.NoError(t, err)
			require.Equal(t, "Looking around.", got.Text)

			require.Empty(t, h.main.Requests(), "the built-in upstream saw nothing")
			reqs := h.alt.Requests()
			require.Len(t, reqs, 2, "the request and its follow-up went to the routed upstream")
			for _, r := range reqs {
				require.Equal(t, "small-1", requestedModel(t, d, r))
				requireRoutedCredential(t, d, r)
			}

			evs := h.events.Of(events.RouteSelected)
			require.Len(t, evs, 1)
			require.Equal(t, map[string]any{"rule": "big", "requested_model": "big-model", "model": "small-1",
				"upstream": "alt-" + provider(t, d), "sticky": false, "refused": false}, evs[0].Data)
			m := kit.Metrics(t, h.URL+"/metrics")
			require.Equal(t, 1.0, m.Value("shepherd_route_decisions_total", `rule="big"`, `upstream="alt-`+provider(t, d)+`"`, `outcome="routed"`))

			sess, err := h.store.Get(context.Background(), state.Key{Tenant: routeTenant(t, h, d), Session: "route-" + d.Name()})
			require.NoError(t, err)
			require.Equal(t, state.Route{Rule: "big", RequestedModel: "big-model", Model: "small-1", Upstream: "alt-" + provider(t, d)}, sess.Routes["main"])
		})
	}
}

// provider is the provider family of a kit driver's API.
func provider(t *testing.T, d kit.Driver) string {
	t.Helper()
	api, err := apis.Lookup(d.Name())
	require.NoError(t, err)
	return api.Provider
}

// routeTenant finds the tenant of the harness's only session.
func routeTenant(t *testing.T, h *routeHarness, d kit.Driver) string {
	t.Helper()
	list, err := h.store.List(context.Background(), "", 10)
	require.NoError(t, err)
	require.NotEmpty(t, list)
	return list[0].Tenant
}

// A session keeps the route it began with when a later request matches
// another rule, switches on a rule that opts out, and a refusal answers in
// the API's error shape.
func TestRoutingStickyAndRefusal(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			fam := provider(t, d)
			h := newRouteHarness(t, []string{
				`no-retired model=retired-* refuse="retired models are not served here"`,
				"huge min_input_tokens=20000 set_model=huge-1 upstream=alt-" + fam + " sticky=false",
				"large min_input_tokens=2000 set_model=large-1 upstream=alt-" + fam,
			}, nil)
			hdr := withHeaders(d, map[string]string{"X-Session-Id": "sticky-" + d.Name()})
			send := func(text string) {
				t.Helper()
				h.main.Script(mock.Reply{Text: "ok"})
				h.alt.Script(mock.Reply{Text: "ok"})
				body := d.Request(kit.Request{Model: "m-1", Tools: []kit.Tool{kit.ReadTool}, History: []string{d.User(text)}})
				resp, reply := kit.Do(t, "POST", h.URL+d.Path("m-1", false), body, hdr)
				require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
			}
			// A small first request: no rule, the session begins on the
			// built-in upstream with its own model.
			send("hello")
			require.Len(t, h.main.Requests(), 1)
			// Large now, which "large" would route elsewhere: the session
			// keeps its start.
			send(strings.Repeat("large ", 2000))
			require.Len(t, h.main.Requests(), 2, "sticky: still the built-in upstream")
			require.Empty(t, h.alt.Requests())
			require.Equal(t, "m-1", requestedModel(t, d, h.main.Requests()[1]))
			evs := h.events.Of(events.RouteSelected)
			require.Len(t, evs, 1)
			require.Equal(t, true, evs[0].Data["sticky"])
			require.Equal(t, fam, evs[0].Data["upstream"])
			// "huge" opts out of stickiness: it switches.
			send(strings.Repeat("huge ", 20000))
			require.Len(t, h.alt.Requests(), 1)
			require.Equal(t, "huge-1", requestedModel(t, d, h.alt.Requests()[0]))

			// Refusal: 403 in the API's error shape, nothing sent upstream.
			before := len(h.main.Requests()) + len(h.alt.Requests())
			body := d.Request(kit.Request{Model: "retired-2", History: []string{d.User("hi")}})
			resp, reply := kit.Do(t, "POST", h.URL+d.Path("retired-2", false), body, hdr)
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			require.NoError(t, d.ErrorShape(http.StatusForbidden, reply))
			require.Contains(t, string(reply), "retired models are not served here")
			require.Equal(t, before, len(h.main.Requests())+len(h.alt.Requests()))
			evs = h.events.Of(events.RouteSelected)
			require.Equal(t, true, evs[len(evs)-1].Data["refused"])
		})
	}
}

// With every feature off no turn runs: the session's route is read from
// the store and recorded off the request path, and still sticks.
func TestRoutingStickyWithoutTurn(t *testing.T) {
	d, _ := kit.Lookup("anthropic")
	h := newRouteHarness(t, []string{"large min_input_tokens=2000 upstream=alt-anthropic"}, func(c *config.Config) { c.Topics.Enabled = false })
	hdr := withHeaders(d, map[string]string{"X-Session-Id": "noturn"})
	send := func(text string) {
		h.main.Script(mock.Reply{Text: "ok"})
		body := d.Request(kit.Request{Model: "m-1", Tools: []kit.Tool{kit.ReadTool}, History: []string{d.User(text)}})
		resp, reply := kit.Do(t, "POST", h.URL+d.Path("m-1", false), body, hdr)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
	}
	send("hello")
	require.Eventually(t, func() bool {
		list, _ := h.store.List(context.Background(), "", 10)
		if len(list) != 1 {
			return false
		}
		s, err := h.store.Get(context.Background(), state.Key{Tenant: list[0].Tenant, Session: "noturn"})
		return err == nil && s.Routes["main"].Upstream == "anthropic"
	}, 2*time.Second, 10*time.Millisecond)
	send(strings.Repeat("large ", 2000))
	require.Len(t, h.main.Requests(), 2)
	require.Empty(t, h.alt.Requests())
}

// A Gemini model in the path is rewritten on the stream route too, and
// the query-string key is replaced by the upstream's header.
func TestRoutingGeminiPathAndQueryKey(t *testing.T) {
	d, _ := kit.Lookup("gemini")
	h := newRouteHarness(t, []string{"flash model=gemini-2.5-pro set_model=gemini-2.5-flash upstream=alt-gemini"}, nil)
	h.alt.Script(mock.Reply{Text: "ok"})
	body := d.Request(kit.Request{Model: "gemini-2.5-pro", History: []string{d.User("hi")}, Stream: true})
	resp, reply := kit.Do(t, "POST", h.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=g-test", body, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
	reqs := h.alt.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", reqs[0].Path)
	require.Equal(t, "alt=sse", reqs[0].Query)
	requireRoutedCredential(t, d, reqs[0])
}

// A turn that only returns the results of file edits matches phase=edit;
// a subagent's request (Claude Code's agent id header) has a lane of its
// own, so the main lane's decision does not hold it.
func TestRoutingEditPhaseAndSubagent(t *testing.T) {
	d, _ := kit.Lookup("anthropic")
	h := newRouteHarness(t, []string{
		"edits phase=edit set_model=fast-1 upstream=alt-anthropic sticky=false",
		"subs kind=subagent set_model=sub-1",
	}, func(c *config.Config) { c.Topics.Enabled = false })
	hdr := withHeaders(d, map[string]string{"X-Session-Id": "phases"})
	tools := []kit.Tool{kit.ReadTool, {Name: "Edit", Schema: `{"type":"object"}`}}

	h.main.Script(mock.Reply{ToolCalls: []mock.ToolCall{{ID: "e1", Name: "Edit", Args: `{"file_path":"a.go","old_string":"a","new_string":"b"}`}}})
	history := []string{d.User("rename a to b")}
	resp, reply := kit.Do(t, "POST", h.URL+d.Path("m-1", false), d.Request(kit.Request{Model: "m-1", Tools: tools, History: history}), hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
	require.Len(t, h.main.Requests(), 1, "a prompt matches no rule")

	history = append(history, d.Echo(reply)...)
	history = append(history, d.ToolResult("e1", "Edit", "done"))
	h.alt.Script(mock.Reply{Text: "edited"})
	resp, reply = kit.Do(t, "POST", h.URL+d.Path("m-1", false), d.Request(kit.Request{Model: "m-1", Tools: tools, History: history}), hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
	require.Len(t, h.alt.Requests(), 1, "the edit's results went to the apply model")
	require.Equal(t, "fast-1", requestedModel(t, d, h.alt.Requests()[0]))

	sub := withHeaders(d, map[string]string{"X-Session-Id": "phases", "X-Claude-Code-Agent-Id": "agent-7"})
	h.main.Script(mock.Reply{Text: "sub"})
	resp, reply = kit.Do(t, "POST", h.URL+d.Path("m-1", false), d.Request(kit.Request{Model: "m-1", Tools: tools, History: []string{d.User("look around")}}), sub)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(reply))
	reqs := h.main.Requests()
	require.Equal(t, "sub-1", requestedModel(t, d, reqs[len(reqs)-1]), "the subagent lane is not the main lane's")
}
