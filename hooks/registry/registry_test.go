package registry

import (
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/budgets"
	"github.com/shepherd-proxy/shepherd/hooks/compaction"
	"github.com/shepherd-proxy/shepherd/hooks/edits"
	"github.com/shepherd-proxy/shepherd/hooks/format"
	"github.com/shepherd-proxy/shepherd/hooks/gating"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/prose"
	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
)

// TestListIsChainOrder: the registry lists every section, under its key,
// in the order of Sections' fields, and every field is a Section.
func TestListIsChainOrder(t *testing.T) {
	var s Sections
	var names []string
	for _, e := range s.List() {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{budgets.Name, gating.Name, compaction.Name, intents.Name, topics.Name,
		format.Name, prose.Name, recovery.Name, edits.Name}, names)
	require.Equal(t, reflect.TypeFor[Sections]().NumField(), len(names))
}

func TestDefaultsAreValid(t *testing.T) {
	d := Defaults()
	require.Empty(t, d.Validate())
	require.True(t, d.Topics.Enabled)
	require.Equal(t, hooks.SwitchAuto, d.Intents.Enabled)
	require.True(t, d.Recovery.Enabled)

	d.Topics.Placement = "footer"
	d.Recovery.MaxAttempts = 9
	d.Intents.File = ""
	var keys []string
	for _, p := range d.Validate() {
		keys = append(keys, p.Key)
	}
	require.Equal(t, []string{"intents.file", "topics.placement", "recovery.max_attempts"}, keys, "problems of every section, in chain order")
}

// TestProvisionAndChains: the enabled features are provisioned in chain
// order, each API's chain holds their hooks for it, and they are closed.
func TestProvisionAndChains(t *testing.T) {
	s := Defaults()
	s.Intents.Enabled = hooks.SwitchOff
	reg := prometheus.NewRegistry()
	ps, err := Provision(&s, hooks.Env{Metrics: reg, Log: zap.NewNop(), WorkDir: t.TempDir()})
	require.NoError(t, err)
	require.Equal(t, []string{topics.Name, recovery.Name, edits.Name}, ps.Names())

	c, err := ps.Chain(hooks.API{Key: "anthropic", Continues: true})
	require.NoError(t, err)
	require.True(t, c.Continues())
	require.False(t, c.FailsClosed())
	c, err = ps.Chain(hooks.API{Key: "gemini"})
	require.NoError(t, err)
	require.False(t, c.Continues(), "recovery only where the API can continue")
	require.False(t, c.Empty())
	require.Empty(t, ps.Reports())
	require.NoError(t, ps.Close())

	s.Topics.Enabled, s.Recovery.Enabled, s.Edits.Enabled = false, false, false
	ps, err = Provision(&s, hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	c, err = ps.Chain(hooks.API{Key: "anthropic", Continues: true})
	require.NoError(t, err)
	require.True(t, c.Empty())
}

// TestProvisionFailureClosesTheRest: a feature failing to provision (here
// its metrics collide) is an error naming it.
func TestProvisionFailureClosesTheRest(t *testing.T) {
	s := Defaults()
	s.Intents.Enabled = hooks.SwitchOff
	reg := prometheus.NewRegistry()
	_, err := Provision(&s, hooks.Env{Metrics: reg, Log: zap.NewNop()})
	require.NoError(t, err)
	_, err = Provision(&s, hooks.Env{Metrics: reg, Log: zap.NewNop()})
	require.ErrorContains(t, err, "topics:")
}
