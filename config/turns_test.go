package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTurnsKeys(t *testing.T) {
	c, err := Load(LoadOptions{File: writeFile(t, "turns:\n  max_followups: 2\n  max_refusal_rounds: 1\n"), Env: noEnv})
	require.NoError(t, err)
	require.Equal(t, Turns{MaxFollowups: 2, MaxRefusalRounds: 1}, c.Turns)
	require.Empty(t, c.Deprecations())

	c, err = Load(LoadOptions{Env: []string{"SHEPHERD_TURNS_MAX_REFUSAL_ROUNDS=0"}})
	require.NoError(t, err)
	require.Equal(t, 0, c.Turns.MaxRefusalRounds)
	require.Equal(t, 4, c.Turns.MaxFollowups)
}

func TestTurnsValidate(t *testing.T) {
	c := Defaults()
	c.Turns.MaxFollowups = 17
	c.Turns.MaxRefusalRounds = -1
	var ve *ValidationError
	require.ErrorAs(t, c.Validate(), &ve)
	require.Equal(t, []string{"turns.max_followups", "turns.max_refusal_rounds"}, problemKeys(ve))
}

// TestTopicsMaxFollowupsAlias: the deprecated key still works, sets
// turns.max_followups only, and says so.
func TestTopicsMaxFollowupsAlias(t *testing.T) {
	c, err := Load(LoadOptions{File: writeFile(t, "topics:\n  max_followups: 1\n"), Env: noEnv})
	require.NoError(t, err)
	require.Equal(t, 1, c.Turns.MaxFollowups)
	require.Equal(t, Defaults().Turns.MaxRefusalRounds, c.Turns.MaxRefusalRounds)
	require.Len(t, c.Deprecations(), 1)
	require.Contains(t, c.Deprecations()[0], "turns.max_followups")

	c, err = Load(LoadOptions{Env: []string{"SHEPHERD_TOPICS_MAX_FOLLOWUPS=0"}})
	require.NoError(t, err)
	require.Equal(t, 0, c.Turns.MaxFollowups)

	// Both keys agreeing is fine; disagreeing is refused.
	_, err = Load(LoadOptions{File: writeFile(t, "topics:\n  max_followups: 2\nturns:\n  max_followups: 2\n"), Env: noEnv})
	require.NoError(t, err)
	_, err = Load(LoadOptions{File: writeFile(t, "topics:\n  max_followups: 2\nturns:\n  max_followups: 3\n"), Env: noEnv})
	require.ErrorContains(t, err, "set only turns.max_followups")

	_, err = Load(LoadOptions{File: writeFile(t, "topics:\n  max_followups: 17\n"), Env: noEnv})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
}
