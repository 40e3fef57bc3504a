package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// deployDir is the repository's deploy/ folder.
const deployDir = "../../deploy"

// dashboard is what the test reads of a Grafana dashboard JSON.
type dashboard struct {
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "dashboards", "shepherd.json"))
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// TestDashboardMetricsExist: every metric the dashboard's queries select
// is one a running shepherd exposes. The proxy runs in process with the
// features the panels watch (intent governance, truncation recovery) and
// is driven through the mock provider until each family the dashboard
// names has a sample (session budgets on, far from their limits): a priced streamed turn with cache usage, a cut reply
// that recovery continues, a tool call governance refuses, an unreachable
// upstream, a client that leaves, and a store that does not answer
// /readyz. Histograms are matched by their _bucket, _sum and _count
// series.
func TestDashboardMetricsExist(t *testing.T) {
	d := readDashboard(t)
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q has an empty query", p.Title)
			exprs = append(exprs, tg.Expr)
		}
	}

	url := driveShepherd(t)
	ms := kit.Metrics(t, url+"/metrics")

	names := map[string]bool{}
	for _, e := range exprs {
		got := MetricNames(e)
		require.NotEmpty(t, got, "query %q selects no metric", e)
		for _, n := range got {
			names[n] = true
			require.True(t, exposed(ms, n), "query %q selects %s, which shepherd does not expose", e, n)
		}
	}
	// The panels the issue asks for, by the metrics they rest on.
	for _, n := range []string{
		"shepherd_requests_total", "shepherd_overhead_seconds_bucket", "shepherd_intent_decisions_total",
		"shepherd_recovery_attempts_total", "shepherd_tokens_total", "shepherd_cost_usd_total",
	} {
		require.True(t, names[n], "no panel queries %s", n)
	}
}

// exposed reports whether the scrape has metric n: a family of that name,
// or a histogram's _bucket, _sum or _count series.
func exposed(ms *kit.MetricSet, n string) bool {
	if ms.Has(n) && !ms.IsHistogram(n) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(n, suffix); ok && ms.IsHistogram(base) {
			return true
		}
	}
	return false
}

// testPolicy is an intents policy whose current intent forbids Bash.
const testPolicy = `version: 1
current_intent_id: INT-001
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**"]
    constraints:
      disallow_tools: ["Bash"]
`

// unreadyStore is a state store whose Ping fails.
type unreadyStore struct{ state.Store }

func (unreadyStore) Ping(context.Context) error { return errors.New("store down") }

// driveShepherd starts shepherd in process and sends it the traffic that
// gives every family the dashboard reads a sample; it returns the base
// URL (admin endpoints on the same listener).
func driveShepherd(t *testing.T) string {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".orchestration"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".orchestration", "active_intents.yaml"), []byte(testPolicy), 0o644))

	dead := kit.Listen(t) // a Gemini upstream that refuses connections
	deadURL := "http://" + dead.Addr().String()
	require.NoError(t, dead.Close())

	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), deadURL
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Intents.Enabled = config.SwitchOn
	cfg.Intents.WorkspaceRoot = ws
	cfg.Recovery.Enabled = true
	cfg.Budgets.Enabled, cfg.Budgets.MaxTurns = hooks.OptInOn, 1000
	// The context features, for their panel (they act only on requests
	// naming them: none here).
	cfg.Compaction.Enabled, cfg.Prose.Enabled, cfg.Gating.Enabled = hooks.OptInHeader, hooks.OptInHeader, hooks.OptInHeader
	cfg.Format.Enabled, cfg.Format.Rules = hooks.OptInHeader, []string{"short match=brief words=50"}
	require.NoError(t, cfg.Validate())

	mem := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})
	metrics := proxy.NewMetrics()
	log := zaptest.NewLogger(t)
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, log, proxy.FeatureDeps{Counters: mem})
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: unreadyStore{mem}, Metrics: metrics, Features: features})
	require.NoError(t, err)
	url := kit.Serve(t, srv, func() { _ = features.Close() }, func() { _ = mem.Close() })

	d := kit.Get(t, "anthropic")
	bash := kit.Tool{Name: "Bash", Description: "Run a command", Schema: `{"type":"object"}`}
	agent := func(session string, stream bool) *kit.Agent {
		a := kit.NewAgent(d, url, map[string]string{"X-Session-Id": session})
		a.Request.Model = "claude-opus-4-5"
		a.Request.Tools = append(a.Request.Tools, bash)
		a.Request.Stream = stream
		a.User("hello")
		return a
	}

	// A priced streamed turn that read and wrote the prompt cache.
	m.Script(mock.Reply{Text: "streamed", Usage: mock.Usage{Input: 100, Output: 20, CacheRead: 400, CacheWrite: 50}})
	resp, body := agent("dash-stream", true).Post(t)
	require.Equal(t, 200, resp.StatusCode, string(body))

	// A reply cut by the output limit, continued by recovery.
	m.Script(mock.Reply{Text: "first half", Stop: "max_tokens"}, mock.Reply{Text: " second half"})
	agent("dash-recovery", false).Send(t)

	// A Bash call governance refuses, and the follow-up after it.
	m.Script(mock.Reply{ToolCalls: []mock.ToolCall{{Name: "Bash", Args: `{"command":"ls"}`}}}, mock.Reply{Text: "done"})
	agent("dash-refusal", false).Send(t)

	// An upstream that cannot be reached.
	g := kit.NewAgent(kit.Get(t, "gemini"), url, nil)
	g.User("hello")
	resp, body = g.Post(t)
	require.GreaterOrEqual(t, resp.StatusCode, 500, string(body))

	// A client that leaves while shepherd waits for the upstream.
	m.Script(mock.Reply{Text: "too late", HeaderDelay: 3 * time.Second})
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	a := agent("dash-leaves", false)
	req, err := http.NewRequest(http.MethodPost, url+d.Path(a.Request.Model, false), strings.NewReader(a.Body()))
	require.NoError(t, err)
	for k, v := range d.Headers() {
		req.Header.Set(k, v)
	}
	if r, err := impatient.Do(req); err == nil {
		r.Body.Close()
		t.Fatalf("the upstream answered before the client gave up")
	}

	// A store that does not answer the readiness probe.
	resp, _ = kit.Do(t, http.MethodGet, url+"/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

	require.Eventually(t, func() bool {
		return kit.Metrics(t, url+"/metrics").Sum("shepherd_client_disconnects_total") > 0
	}, 5*time.Second, 50*time.Millisecond, "the client that left is counted")
	return url
}

// TestDashboardDatasource: every panel queries the datasource the
// provisioning file declares, by its uid.
func TestDashboardDatasource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "provisioning", "datasources", "prometheus.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(b), "uid: prometheus")
	require.Contains(t, string(b), "url: http://prometheus:9090")
	d := readDashboard(t)
	require.Equal(t, "shepherd", d.UID)
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, "panel %q", p.Title)
		require.Equal(t, "prometheus", p.Datasource.UID, "panel %q", p.Title)
		require.Equal(t, "prometheus", p.Datasource.Type, "panel %q", p.Title)
	}
}
