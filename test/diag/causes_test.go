package diag_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestPrefixBreakByCompaction: on every API (non-streamed), a tool loop with
// big results under evidence compaction: each request that starts an epoch
// reports a prefix break caused by compaction, exactly where the upstream
// view breaks (kit.PrefixBreak), and every other request an intact prefix.
func TestPrefixBreakByCompaction(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, func(c *config.Config) {
				c.Compaction.Enabled = hooks.OptInOn
				c.Compaction.TriggerTokens = 8000
				c.Compaction.ItemChars = 1000
				c.Compaction.TotalChars = 2500
				c.Compaction.KeepRecent = 2
			})
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "compaction-" + d.Name()})
			a.User("Read the files.")
			const rounds = 10
			for i := range rounds {
				r.Mock.Script(mock.Reply{ID: fmt.Sprintf("msg_%02d", i), ToolCalls: []mock.ToolCall{{
					ID: fmt.Sprintf("call_%02d", i), Name: "Read", Args: fmt.Sprintf(`{"path":"f%d.go"}`, i)}}})
				got, _, _ := a.Send(t)
				require.Len(t, got.Calls, 1)
				id := got.Calls[0].ID
				if id == "" {
					id = fmt.Sprintf("call_%02d", i)
				}
				a.ToolResult(id, "Read", strings.Repeat(fmt.Sprintf("line %d of a big file\n", i), 300))
			}
			evs := r.finished(t, rounds)
			epochs := len(r.Events.Of(events.ContextCompacted))
			require.Positive(t, epochs, "the loop compacted")
			bodies := r.upstreamBodies()
			breaks := 0
			for i := 1; i < rounds; i++ {
				d0 := evs[i].Data
				if kit.PrefixBreak(d, bodies[i-1], bodies[i]) < 0 {
					require.Equal(t, -1, d0["prefix_break_offset"], "request %d", i)
					continue
				}
				breaks++
				require.Equal(t, "compaction", d0["prefix_break_cause"], "request %d", i)
				require.Positive(t, d0["prefix_break_offset"], "request %d", i)
			}
			require.Equal(t, epochs, breaks, "one break per epoch")
			require.Equal(t, float64(breaks), kit.Metrics(t, r.URL+"/metrics").Value("shepherd_prefix_breaks_total", `cause="compaction"`))
		})
	}
}
