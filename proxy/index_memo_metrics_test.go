package proxy_test

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestIndexMemoBodiesMetric: a Claude Code shaped session (messages first,
// then its system prompt and tools) is validated whole on its first
// request and resumed on the next ones, with what follows the conversation
// taken from the previous body's index, on routes with hooks (the codec's
// parse) and without (the peek): shepherd_index_memo_bodies_total says so.
func TestIndexMemoBodiesMetric(t *testing.T) {
	for name, topics := range map[string]bool{"hooks": true, "no hooks": false} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = topics }})
			hdr := map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "X-Session-Id": "memo-" + name}
			for _, body := range workload.AgentHistory(workload.AgentTurns, 3) {
				resp, reply := do(t, "POST", h.URL+"/v1/messages", string(body), hdr)
				require.Equal(t, 200, resp.StatusCode, "%s", reply)
			}
			require.Equal(t, 1.0, metricValue(t, h, "shepherd_index_memo_bodies_total", `result="whole"`))
			require.Equal(t, 3.0, metricValue(t, h, "shepherd_index_memo_bodies_total", `result="resumed_tail"`))
			require.Equal(t, 0.0, metricValue(t, h, "shepherd_index_memo_bodies_total", `result="resumed"`))
		})
	}
}

// TestIndexMemoPrefetchedMetric: a long history (128 KB) is compared with
// the session's previous body while it arrives, on routes with hooks (the
// body read whole) and without them (forwarded cut-through), so every
// request after the session's first counts in
// shepherd_index_memo_prefetched_bodies_total, and is resumed as before.
func TestIndexMemoPrefetchedMetric(t *testing.T) {
	for name, topics := range map[string]bool{"hooks": true, "no hooks": false} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = topics }})
			hdr := map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "X-Session-Id": "prefetch-" + name}
			bodies := workload.AgentHistory(workload.HistoryTurns(128<<10), 3)
			for _, body := range bodies {
				resp, reply := do(t, "POST", h.URL+"/v1/messages", string(body), hdr)
				require.Equal(t, 200, resp.StatusCode, "%s", reply)
			}
			require.Equal(t, 3.0, metricValue(t, h, "shepherd_index_memo_prefetched_bodies_total", ""))
			require.Equal(t, 3.0, metricValue(t, h, "shepherd_index_memo_bodies_total", `result="resumed_tail"`))
			if !topics {
				require.Equal(t, 4.0, kit.Metrics(t, h.URL+"/metrics").Sum("shepherd_cut_through_requests_total", `result="forwarded"`))
			}
		})
	}
}

// TestIndexMemoNoPrefetchOfEncodedBodies: a body sent with a
// Content-Encoding is not compared while it arrives (the bytes that arrive
// are not the ones parsed), and is still resumed from the session's
// previous body once decoded.
func TestIndexMemoNoPrefetchOfEncodedBodies(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
	bodies := workload.AgentHistory(workload.HistoryTurns(128<<10), 3)
	for i, body := range bodies {
		hdr := map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "X-Session-Id": "encoded"}
		payload := body
		if i > 0 && i < 3 {
			var buf bytes.Buffer
			w, err := gzip.NewWriterLevel(&buf, gzip.NoCompression) // stored: as long as the body
			require.NoError(t, err)
			_, _ = w.Write(body)
			require.NoError(t, w.Close())
			payload = buf.Bytes()
			require.Greater(t, len(payload), 64<<10)
			hdr["Content-Encoding"] = "gzip"
		}
		resp, reply := do(t, "POST", h.URL+"/v1/messages", string(payload), hdr)
		require.Equal(t, 200, resp.StatusCode, "%s", reply)
	}
	require.Equal(t, 1.0, metricValue(t, h, "shepherd_index_memo_prefetched_bodies_total", ""), "only the last body, sent plain")
	require.Equal(t, 3.0, metricValue(t, h, "shepherd_index_memo_bodies_total", `result="resumed_tail"`))
}
