package bench_test

import (
	"fmt"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// sessionTurns is how many requests one benchmarked session makes.
const sessionTurns = 60

// BenchmarkProxySession runs whole agent sessions through shepherd: request
// k is the agent50k shape with its first k tool round trips, so every
// request extends the one before it byte for byte, as an agent's requests
// do (the load bench's workloads repeat one body instead). Each iteration
// is a fresh session of sessionTurns requests (the last one ~100 KB); with
// hooks on, every request replays the reminders of all earlier turns from
// the session ledger. ns/request is the mean over a session; last-ns is the
// final request alone.
func BenchmarkProxySession(b *testing.B) {
	bodies := make([][]byte, sessionTurns)
	for k := range bodies {
		bodies[k] = workload.AnthropicAgent(k+1, false)
	}
	for _, hooks := range []bool{false, true} {
		name := map[bool]string{false: "hooks-off", true: "hooks-on"}[hooks]
		b.Run(name, func(b *testing.B) {
			e := startEnvWith(b, hooks)
			c := newClient(e.proxyAddr, false)
			defer c.CloseIdleConnections()
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI("http://" + e.proxyAddr + "/v1/messages")
			req.Header.SetContentType("application/json")
			req.Header.Set("x-api-key", "sk-ant-bench")
			req.Header.Set("anthropic-version", "2023-06-01")
			var session int
			var last float64
			b.ReportAllocs()
			for b.Loop() {
				session++
				req.Header.Set("X-Session-Id", fmt.Sprintf("bench-session-%d", session))
				for k, body := range bodies {
					req.SetBodyRaw(body)
					start := b.Elapsed()
					if err := c.Do(req, resp); err != nil {
						b.Fatal(err)
					}
					if resp.StatusCode() != fasthttp.StatusOK {
						b.Fatalf("turn %d: status %d: %.200s", k, resp.StatusCode(), resp.Body())
					}
					if k == len(bodies)-1 {
						last += float64(b.Elapsed() - start)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(session*sessionTurns), "ns/request")
			b.ReportMetric(last/float64(session), "last-ns")
		})
	}
}
