package anthropic

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite"
)

// BenchmarkParseGrowing parses an agent request whose history the
// conversation sent before (the previous body plus one tool round trip),
// and takes its anchors, as the turn engine does: what grows with the
// history here is what the index memo's reuse of the previous views and
// anchors does not remove.
func BenchmarkParseGrowing(b *testing.B) {
	for _, turns := range []int{30, 720} {
		const growth = 16
		bodies := make([][]byte, growth+1)
		for k := range bodies {
			bodies[k] = workload.AnthropicAgent(turns+k, false)
		}
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			c := Descriptor.NewCodec(rewrite.NewViewCache(rewrite.DefaultViewCacheBytes))
			// Every growth round is a new session (its task tagged), so no
			// body is parsed twice: a body the memo saw before, byte for
			// byte, is not what an agent sends.
			task := []byte(workload.AgentTask)
			cur := make([][]byte, len(bodies))
			round := 0
			b.SetBytes(int64(len(bodies[0])))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := 1 + i%growth
				if k == 1 {
					b.StopTimer()
					round++
					tagged := []byte(fmt.Sprintf("%s (session %d)", workload.AgentTask, round))
					for j := range bodies {
						cur[j] = bytes.Replace(bodies[j], task, tagged, 1)
					}
					if _, err := c.ParseRequest(cur[0]); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				req, err := c.ParseRequest(cur[k])
				if err != nil {
					b.Fatal(err)
				}
				if a := req.Anchors(); len(a) != len(req.Messages) {
					b.Fatal("anchors")
				}
			}
		})
	}
}
