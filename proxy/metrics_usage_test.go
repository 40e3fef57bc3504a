package proxy

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

func TestUsageMetrics(t *testing.T) {
	m := NewMetrics()
	m.Usage("messages", "claude-sonnet-4-5", conv.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 20}, 0.25)
	m.Usage("messages", "claude-sonnet-4-5", conv.Usage{InputTokens: 1, OutputTokens: 2}, 0.5)
	m.Usage("responses", "", conv.Usage{InputTokens: 7}, 0)

	tok := func(route, model, kind string) float64 {
		return gathered(t, m, "shepherd_tokens_total", map[string]string{"route": route, "model": model, "kind": kind})
	}
	require.Equal(t, 11.0, tok("messages", "claude-sonnet-4-5", "input"))
	require.Equal(t, 7.0, tok("messages", "claude-sonnet-4-5", "output"))
	require.Equal(t, 100.0, tok("messages", "claude-sonnet-4-5", "cache_read"))
	require.Equal(t, 20.0, tok("messages", "claude-sonnet-4-5", "cache_write"))
	require.Equal(t, 7.0, tok("responses", "unknown", "input"))
	require.InDelta(t, 0.75, gathered(t, m, "shepherd_cost_usd_total", map[string]string{"route": "messages", "model": "claude-sonnet-4-5"}), 1e-12)
	require.Zero(t, series(t, m, "shepherd_cost_usd_total")-1, "no cost series for a zero cost")
}

// The model label keeps the first 64 distinct names; later ones, and
// overlong ones, are "other", also under concurrent use.
func TestUsageModelLabelBounded(t *testing.T) {
	m := NewMetrics()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				m.Usage("chat_completions", fmt.Sprintf("model-%d", (i*7+g)%100), conv.Usage{OutputTokens: 1}, 0)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, maxModelLabels+1, series(t, m, "shepherd_tokens_total"), "64 names and other")
	require.Equal(t, 400.0, gathered(t, m, "shepherd_tokens_total", nil), "no token lost to the bound")

	require.Equal(t, "other", m.usage.models.label("model-new"))
	require.Equal(t, "other", (&modelLabels{}).label(strings.Repeat("x", maxModelLabelLen+1)))
	require.Equal(t, "gpt-5", (&modelLabels{}).label("gpt-5"))
}

// gathered sums the counters of family name whose labels include want.
func gathered(t *testing.T, m *Metrics, name string, want map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, mt := range family(t, m, name) {
		labels := map[string]string{}
		for _, l := range mt.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && labels[k] == v
		}
		if ok {
			sum += mt.GetCounter().GetValue()
		}
	}
	return sum
}

func series(t *testing.T, m *Metrics, name string) int { return len(family(t, m, name)) }

func family(t *testing.T, m *Metrics, name string) []*dto.Metric {
	t.Helper()
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, mt := range mf.GetMetric() {
				for _, l := range mt.GetLabel() {
					require.NotContains(t, l.GetName(), "session")
				}
			}
			return mf.GetMetric()
		}
	}
	return nil
}
