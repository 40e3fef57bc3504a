package topics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
)

func TestConfigValidate(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.Empty(t, c.Validate(), "the defaults are valid")
	require.Equal(t, []string{DefaultTopicTool}, c.OwnedTools())
	c.Placement, c.ToolName, c.MaxFollowups = "footer", "new topic!", 17
	c.MaxChapters, c.MaxCalls = 0, maxBound+1
	var keys []string
	for _, p := range c.Validate() {
		keys = append(keys, p.Key)
	}
	require.Equal(t, []string{"topics.placement", "topics.tool_name", "topics.max_followups", "topics.max_chapters", "topics.max_calls"}, keys)
	c.Enabled = false
	require.Nil(t, c.OwnedTools())
}

// TestProvision: the plug-in gives one hook to every chain and counts
// accepted topic changes on the registerer it was given; off, it
// provisions nothing.
func TestProvision(t *testing.T) {
	var c Config
	c.SetDefaults()
	reg := prometheus.NewRegistry()
	p, err := c.Provision(hooks.Env{Metrics: reg, Log: zap.NewNop()})
	require.NoError(t, err)
	a, err := p.Hook(hooks.API{Key: "anthropic"})
	require.NoError(t, err)
	b, err := p.Hook(hooks.API{Key: "gemini", Continues: true})
	require.NoError(t, err)
	require.Same(t, a, b)
	_, err = a.(hooks.ReplyHook).OnReply(t.Context(), callOn(nil), replyWithTopic("Research"))
	require.NoError(t, err)
	require.Equal(t, 1.0, counterValue(t, reg, "shepherd_topic_changes_total"))
	require.NoError(t, p.Close())

	c.Enabled = false
	p, err = c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	require.Nil(t, p)
}

// counterValue reads the unlabelled counter name from g.
func counterValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
