package bench_test

import (
	"fmt"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// historyCases are the history sizes of BenchmarkHistory: the agent50k
// shape with this many tool round trips (~1.4 KB each).
var historyCases = []struct {
	name  string
	turns int
}{
	{"50k", 30},
	{"1m", 720},
}

// historyGrowth is how many requests one benchmarked session makes after
// its first (untimed) one; each extends the one before it by one round trip.
const historyGrowth = 16

// BenchmarkHistory measures one request whose history the session has sent
// before: a session first sends the base history (untimed), then each timed
// request adds one tool round trip (~1.4 KB) to the previous body, byte for
// byte, as an agent does. After historyGrowth requests a new session starts.
// direct is the mock alone, hooks-off and hooks-on are shepherd with the
// features off / on (topics, intents, recovery, edits; memory store), so
// hooks-on minus direct is what shepherd adds at that history size and the
// difference between 50k and 1m is what grows with the history.
func BenchmarkHistory(b *testing.B) {
	for _, hc := range historyCases {
		bodies := make([][]byte, historyGrowth+1)
		for k := range bodies {
			bodies[k] = workload.AnthropicAgent(hc.turns+k, false)
		}
		for _, target := range []string{"direct", "hooks-off", "hooks-on"} {
			b.Run(fmt.Sprintf("%s/%s", hc.name, target), func(b *testing.B) {
				e := startEnvWith(b, target == "hooks-on")
				addr := e.proxyAddr
				if target == "direct" {
					addr = e.mockAddr
				}
				benchHistory(b, addr, bodies)
			})
		}
	}
}

func benchHistory(b *testing.B, addr string, bodies [][]byte) {
	c := newClient(addr, false)
	defer c.CloseIdleConnections()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI("http://" + addr + "/v1/messages")
	req.Header.SetContentType("application/json")
	req.Header.Set("x-api-key", "sk-ant-bench")
	req.Header.Set("anthropic-version", "2023-06-01")
	do := func(body []byte) {
		req.SetBodyRaw(body)
		if err := c.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != fasthttp.StatusOK {
			b.Fatalf("status %d: %.200s", resp.StatusCode(), resp.Body())
		}
	}
	session, k := 0, len(bodies)
	b.ReportAllocs()
	b.SetBytes(int64(len(bodies[0])))
	b.ResetTimer()
	for range b.N {
		if k == len(bodies) {
			b.StopTimer()
			session++
			req.Header.Set("X-Session-Id", fmt.Sprintf("history-%d", session))
			do(bodies[0])
			k = 1
			b.StartTimer()
		}
		do(bodies[k])
		k++
	}
}
