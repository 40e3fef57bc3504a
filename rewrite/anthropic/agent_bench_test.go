package anthropic

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// BenchmarkParseAgent parses the 50 KB agent request of the load bench:
// cold with the view cache off (every element decoded), warm with every
// element cached (an agent resending its history).
func BenchmarkParseAgent(b *testing.B) {
	body := workload.AnthropicAgent(30, false)
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"cold", 0}, {"warm", rewrite.DefaultViewCacheBytes}} {
		b.Run(tc.name, func(b *testing.B) {
			c := Descriptor.NewCodec(rewrite.NewViewCache(tc.budget))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			apitest.ReportCPU(b, func() {
				if _, err := c.ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
