package budgets

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/state"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		keys []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"all set", func(c *Config) {
			c.Enabled, c.MaxTurns, c.MaxTokens, c.MaxCostUSD, c.MaxIdenticalCalls = hooks.OptInOn, 10, 1000, 2.5, 3
			c.ToolCalls = []string{"Bash=5", "mcp__*=2", "*=50"}
		}, nil},
		{"negative", func(c *Config) { c.MaxTurns, c.MaxTokens, c.MaxIdenticalCalls = -1, -1, -1 },
			[]string{"budgets.max_turns", "budgets.max_tokens", "budgets.max_identical_calls"}},
		{"cost out of range", func(c *Config) { c.MaxCostUSD = -0.5 }, []string{"budgets.max_cost_usd"}},
		{"cost too large", func(c *Config) { c.MaxCostUSD = 2e9 }, []string{"budgets.max_cost_usd"}},
		{"bad rules", func(c *Config) { c.ToolCalls = []string{"Bash", "=3", "Read=0", "Edit=x", "[=1"} }, []string{"budgets.tool_calls"}},
		{"bad scope", func(c *Config) { c.Enabled, c.APIs = "maybe", []string{"soap"} }, []string{"budgets.enabled", "budgets.apis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			c.SetDefaults()
			tc.cfg(&c)
			var keys []string
			for _, p := range c.Validate() {
				keys = append(keys, p.Key)
			}
			assert.Equal(t, tc.keys, keys)
		})
	}
}

func TestParseToolRules(t *testing.T) {
	rules, err := ParseToolRules([]string{" Bash = 5", "mcp__*=2", "*=50"})
	require.NoError(t, err)
	assert.Equal(t, []ToolRule{{"Bash", 5}, {"mcp__*", 2}, {"*", 50}}, rules)
	for tool, want := range map[string]int64{"Bash": 5, "mcp__git__log": 2, "Read": 50, "bash": 50} {
		assert.Equal(t, want, toolLimit(rules, tool), tool)
	}
	assert.Zero(t, toolLimit(rules[:1], "Read"), "no rule matches: no cap")
	_, err = ParseToolRules([]string{"Bash", "Read=-1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"Bash" is not Tool=N`)
	assert.Contains(t, err.Error(), `"Read=-1"`)
}

func TestProvision(t *testing.T) {
	var c Config
	c.SetDefaults()
	p, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	assert.Nil(t, p, "off: nothing provisioned")

	c.Enabled, c.MaxTurns, c.APIs = hooks.OptInOn, 3, []string{"gemini"}
	core, logs := observer.New(zap.WarnLevel)
	p, err = c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.New(core)})
	require.NoError(t, err)
	assert.Nil(t, p, "no counters: nothing enforced")
	assert.Equal(t, 1, logs.FilterMessageSnippet("keeps no counters").Len(), "and it says so once")

	mem := state.NewMemory(state.MemoryOptions{})
	t.Cleanup(func() { _ = mem.Close() })
	p, err = c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop(), Counters: mem})
	require.NoError(t, err)
	require.NotNil(t, p)
	h, err := p.Hook(hooks.API{Key: "gemini"})
	require.NoError(t, err)
	assert.NotNil(t, h)
	h, err = p.Hook(hooks.API{Key: "anthropic"})
	require.NoError(t, err)
	assert.Nil(t, h, "budgets.apis leaves other chains alone")
}

// FuzzParseToolRules: any entry either fails or gives a rule with a
// positive limit and a usable pattern that parses back the same.
func FuzzParseToolRules(f *testing.F) {
	for _, s := range []string{"Bash=5", "*=1", "mcp__*=2", "=", "a=b", "[=1", " x = 3 ", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		rules, err := ParseToolRules([]string{entry})
		if err != nil {
			return
		}
		require.Len(t, rules, 1)
		r := rules[0]
		require.Positive(t, r.Limit)
		require.NotEmpty(t, r.Pattern)
		again, err := ParseToolRules([]string{fmt.Sprintf("%s=%d", r.Pattern, r.Limit)})
		require.NoError(t, err)
		require.Equal(t, rules, again)
		_ = toolLimit(rules, entry)
	})
}
