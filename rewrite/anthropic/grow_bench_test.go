package anthropic

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite"
)

// BenchmarkParseGrowing parses an agent request whose history the
// conversation sent before (the previous body plus one tool round trip),
// and takes its anchors, as the turn engine does: what grows with the
// history here is what the index memo's reuse of the previous views and
// anchors does not remove.
//
// The tools=… cases copy the workload's 12 tools (renamed) until they weigh
// what Claude Code's 22 do (72 KB, after the messages as Claude Code sends
// them): what a request costs when the members after the conversation are
// tens of KB.
func BenchmarkParseGrowing(b *testing.B) {
	for _, c := range []struct{ turns, copies int }{{30, 1}, {720, 1}, {30, 7}, {720, 7}} {
		const growth = 16
		bodies := make([][]byte, growth+1)
		for k := range bodies {
			bodies[k] = widenTools(workload.AnthropicAgent(c.turns+k, false), c.copies)
		}
		name := fmt.Sprintf("turns=%d", c.turns)
		if c.copies > 1 {
			name += fmt.Sprintf("/tools=%dKB", len(gjson.GetBytes(bodies[0], "tools").Raw)>>10)
		}
		b.Run(name, func(b *testing.B) {
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

// widenTools returns body with its tools array made of copies of its
// tools, the k-th copy's names suffixed with _k (one copy: body itself).
func widenTools(body []byte, copies int) []byte {
	if copies <= 1 {
		return body
	}
	tools := gjson.GetBytes(body, "tools")
	var out []string
	for k := range copies {
		tools.ForEach(func(_, t gjson.Result) bool {
			name := t.Get("name").Str
			out = append(out, strings.Replace(t.Raw, `"name":"`+name+`"`, fmt.Sprintf(`"name":"%s_%d"`, name, k), 1))
			return true
		})
	}
	wide := "[" + strings.Join(out, ",") + "]"
	return append(append(append([]byte(nil), body[:tools.Index]...), wide...), body[tools.Index+len(tools.Raw):]...)
}
