package edits

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
	require.Equal(t, Config{Enabled: true, JournalSize: 10, MaxContentBytes: 262144, Log: true}, c)
	require.Nil(t, c.OwnedTools())
	c.JournalSize, c.MaxContentBytes, c.Tools = 0, -1, []string{"note kind=nonsense"}
	var keys []string
	for _, p := range c.Validate() {
		keys = append(keys, p.Key)
	}
	require.Equal(t, []string{"edits.journal_size", "edits.max_content_bytes", "edits.tools"}, keys)
	c.JournalSize = 1001
	require.Equal(t, "edits.journal_size", c.Validate()[0].Key)
}

// TestProvision: one hook for every chain, a CallWatcher and an
// OutcomeHook, with its metrics registered; off, nothing.
func TestProvision(t *testing.T) {
	var c Config
	c.SetDefaults()
	c.Tools = []string{"write_note kind=write path=note_path content=body"}
	reg := prometheus.NewRegistry()
	p, err := c.Provision(hooks.Env{Metrics: reg, Log: zap.NewNop()})
	require.NoError(t, err)
	a, err := p.Hook(hooks.API{Key: "anthropic"})
	require.NoError(t, err)
	b, err := p.Hook(hooks.API{Key: "gemini"})
	require.NoError(t, err)
	require.Same(t, a, b)
	require.Implements(t, (*hooks.CallWatcher)(nil), a)
	require.Implements(t, (*hooks.OutcomeHook)(nil), a)
	require.True(t, writes(a.(*Hook).cfg.Table, "write_note"), "edits.tools are recognised")
	require.True(t, writes(a.(*Hook).cfg.Table, "Write"), "beside the built-in tools")
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")

	c.Enabled = false
	p, err = c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	require.Nil(t, p)
}
