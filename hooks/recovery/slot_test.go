package recovery

import (
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestSlotVersions: the slot reads a version-0 slot (the legacy record's
// "recovery" object), and refuses an unknown version; CountTurn adds one
// turn to it, and leaves an unreadable slot as it is.
func TestSlotVersions(t *testing.T) {
	sess := &state.Session{}
	sess.SetSlot(Name, &state.RawSlot{V: 0, Data: json.RawMessage(`{"truncated":3,"attempts":4,"recovered":2}`)})
	got, err := Of(sess)
	require.NoError(t, err)
	require.Equal(t, &State{Truncated: 3, Attempts: 4, Recovered: 2}, got)

	CountTurn(2, true)(sess)
	CountTurn(1, false)(sess)
	got, err = Of(sess)
	require.NoError(t, err)
	require.Equal(t, &State{Truncated: 5, Attempts: 7, Recovered: 3}, got)

	fresh := &state.Session{}
	CountTurn(1, true)(fresh)
	got, err = Of(fresh)
	require.NoError(t, err)
	require.Equal(t, &State{Truncated: 1, Attempts: 1, Recovered: 1}, got)

	future := &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{}`)}
	fs := &state.Session{}
	fs.SetSlot(Name, future)
	_, err = Of(fs)
	require.ErrorContains(t, err, "newer than this build reads")
	CountTurn(1, true)(fs)
	require.Same(t, future, fs.Slots[Name])
}

// TestProvisionContinuingAPIsOnly: the hook joins only the chains of APIs
// that can continue a reply.
func TestProvisionContinuingAPIsOnly(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.Empty(t, c.Validate())
	p, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	h, err := p.Hook(hooks.API{Key: "x", Continues: true})
	require.NoError(t, err)
	require.True(t, h.(hooks.Continuer).MayContinue())
	h, err = p.Hook(hooks.API{Key: "y"})
	require.NoError(t, err)
	require.Nil(t, h)
	require.NoError(t, p.Close())
	c.Enabled = false
	p, err = c.Provision(hooks.Env{})
	require.NoError(t, err)
	require.Nil(t, p)
}
