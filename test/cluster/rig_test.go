// Package cluster proves shepherd at scale on real infrastructure the test
// kit starts on loopback: a 6-node Redis Cluster (3 masters, 3 replicas),
// several proxies behind an nginx round-robin balancer, a master SIGKILLed
// and a slot resharded mid-session. It skips only when redis-server (or
// nginx, for the balancer) cannot be found; make test installs both.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/events/feed"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
	"github.com/shepherd-proxy/shepherd/test/kit/inproc"
)

// startProxy starts one shepherd server in process, as the binary starts
// it (features built with the store's journal and counters), on the mock
// provider and st, with topics on; it stops when the test ends. The store
// is the caller's.
func startProxy(t *testing.T, m *mock.Server, st state.Store) string {
	t.Helper()
	cfg := config.Defaults()
	inproc.OnMock(&cfg, m)
	cfg.Topics.Enabled = true
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	log := zaptest.NewLogger(t)
	metrics := proxy.NewMetrics()
	// The live feed as the binary wires it: a publisher over the store's
	// event log (so a Redis store also keeps the session's event stream).
	var em events.Emitter = events.Nop{}
	closeFeed := func() {}
	if el, ok := st.(state.EventLog); ok && cfg.Events.Enabled {
		p, err := feed.New(feed.Options{Log: el, Queue: cfg.Events.Queue, Metrics: metrics.Registry, Logger: log.Named("events")})
		require.NoError(t, err)
		em = p
		closeFeed = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.Close(ctx)
		}
	}
	return inproc.Start(t, &cfg, inproc.Options{Store: st, Events: em, Logger: log, Metrics: metrics, Closers: []func(){closeFeed}})
}

// clusterStore is a store on the cluster's seeds with prefix and timeout
// per round trip (0: the production default, 200 ms; tests that are not
// about latency give more, as -race on a busy machine can stall a round
// trip past it), closed when the test ends.
func clusterStore(t *testing.T, c *kit.RedisCluster, prefix string, timeout time.Duration) *state.Redis {
	t.Helper()
	st, err := state.NewRedis(state.RedisOptions{Addrs: c.Addrs(), KeyPrefix: prefix, TTL: time.Hour, Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// replicas starts n proxies, each with its own store from open, behind an
// nginx round-robin balancer, and returns the balancer's URL and the
// proxies' own URLs.
func replicas(t *testing.T, n int, m *mock.Server, open func() state.Store) (string, []string) {
	t.Helper()
	var urls []string
	for range n {
		urls = append(urls, startProxy(t, m, open()))
	}
	return kit.StartBalancer(t, urls...), urls
}

// scriptTurn scripts the mock's replies for turn k of the scenario: topic
// changes (the proxy's follow-up rounds), tool calls and plain text, in a
// cycle of four.
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

// session is one agent conversation of the scenario.
type session struct {
	d  kit.Driver
	m  *mock.Server
	id string
	a  *kit.Agent
	k  int
}

func newSession(d kit.Driver, m *mock.Server, url, id string) *session {
	a := kit.NewAgent(d, url, map[string]string{"X-Session-Id": id})
	a.User("start")
	return &session{d: d, m: m, id: id, a: a}
}

// turn sends the next turn (which must succeed) and answers its tool
// calls, or asks to continue.
func (s *session) turn(t *testing.T) {
	t.Helper()
	scriptTurn(s.m, s.k)
	reply, _, _ := s.a.Send(t)
	if len(reply.Calls) == 0 {
		s.a.User(fmt.Sprintf("continue %d", s.k))
	}
	for _, c := range reply.Calls {
		s.a.ToolResult(c.ID, c.Name, "contents of "+c.Name)
	}
	s.k++
}

// view is the session as the sessions API shows it (with the ledger),
// without what differs between two runs of the same conversation: times,
// the proxies' request ids, and the tenant (a hash of the credentials, the
// same here anyway).
func view(t *testing.T, url, id string) string {
	t.Helper()
	resp, body := kit.Do(t, "GET", url+"/shepherd/v1/sessions/"+id+"?include=ledger", "", nil)
	require.Equal(t, 200, resp.StatusCode, string(body))
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	out, err := json.MarshalIndent(strip(v), "", " ")
	require.NoError(t, err)
	return string(out)
}

func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "at" || strings.HasSuffix(k, "_at") || k == "request_id" {
				delete(x, k)
				continue
			}
			x[k] = strip(x[k])
		}
	case []any:
		for i := range x {
			x[i] = strip(x[i])
		}
	}
	return v
}

// reference plays turns of a conversation on d on one proxy with a memory
// store and returns the session's view: what every multi-replica run must
// end with.
func reference(t *testing.T, d kit.Driver, id string, turns int) string {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	mem := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})
	t.Cleanup(func() { _ = mem.Close() })
	url := startProxy(t, m, mem)
	s := newSession(d, m, url, id)
	for range turns {
		s.turn(t)
	}
	return view(t, url, id)
}

// jsonField is the string member name of a JSON object body.
func jsonField(t *testing.T, body []byte, name string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	s, _ := m[name].(string)
	return s
}
