package recovery

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultRules(t *testing.T) {
	var d Config
	d.SetDefaults()
	rules, err := d.StrategyRules()
	require.NoError(t, err)
	require.Equal(t, []ModelRule[bool]{{"claude-3*", true}, {"*", false}}, rules)
	maxes, err := d.MaxOutputRules()
	require.NoError(t, err)
	require.Equal(t, ModelRule[int64]{"*", 16384}, maxes[len(maxes)-1])
}
