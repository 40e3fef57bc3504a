package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
)

// BenchmarkTurnStoreBudgets measures a session's later turns (JSON, one
// tool declared, so an agent turn that loads and saves) through shepherd
// with the memory or the Redis store (REDIS_URL; skipped without it), and
// budgets off or on (every request budget, a tool cap, the streak). With
// Redis, each turn's round trips are on its latency: the difference
// between budgets off and on is what budgets add.
func BenchmarkTurnStoreBudgets(b *testing.B) {
	for _, store := range []string{"memory", "redis"} {
		for _, budgets := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/budgets=%v", store, budgets), func(b *testing.B) { benchTurnStore(b, store, budgets) })
		}
	}
}

func benchTurnStore(b *testing.B, kind string, budgets bool) {
	var st state.Store
	switch kind {
	case "memory":
		st = state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
	case "redis":
		url := os.Getenv("REDIS_URL")
		if url == "" {
			b.Skip("REDIS_URL not set")
		}
		prefix := fmt.Sprintf("shepherd-bench-%d", time.Now().UnixNano())
		r, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			opts, _ := redis.ParseURL(url)
			raw := redis.NewClient(opts)
			defer raw.Close()
			keys, _ := raw.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				raw.Del(context.Background(), keys...)
			}
		}()
		st = r
	}
	defer st.Close()
	m := mock.New(mock.Options{Default: mock.Reply{Text: strings.Repeat("word ", 50)}})
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Topics.Enabled = false
	if budgets {
		cfg.Budgets.Enabled = hooks.OptInOn
		cfg.Budgets.MaxTurns, cfg.Budgets.MaxTokens, cfg.Budgets.MaxCostUSD, cfg.Budgets.MaxIdenticalCalls = 1<<40, 1<<50, 1e9, 1000
		cfg.Budgets.ToolCalls = []string{"Read=1000000"}
	}
	metrics := proxy.NewMetrics()
	counters, _ := st.(state.Counters)
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, zap.NewNop(), proxy.FeatureDeps{Counters: counters})
	if err != nil {
		b.Fatal(err)
	}
	defer features.Close()
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: zap.NewNop(), Store: st, Metrics: metrics, Features: features})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown(context.Background()) }()
	url := "http://" + ln.Addr().String() + "/v1/messages"
	body := `{"model":"claude-sonnet-4-5","max_tokens":1000,"stream":false,` +
		`"tools":[{"name":"Read","description":"reads a file","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"go on"}]}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func() {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	post() // the session exists: every measured turn is a later one
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		post()
	}
}
