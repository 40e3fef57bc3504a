package proxy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
	"github.com/shepherd-proxy/shepherd/state"
)

// topicsOf is sess's topics slot (an empty one when it has none).
func topicsOf(t testing.TB, sess *state.Session) *topics.State {
	t.Helper()
	st, err := topics.Of(sess)
	require.NoError(t, err)
	if st == nil {
		return &topics.State{}
	}
	return st
}

// intentsOf is sess's intents slot (an empty one when it has none).
func intentsOf(t testing.TB, sess *state.Session) *intents.State {
	t.Helper()
	st, err := intents.Of(sess)
	require.NoError(t, err)
	if st == nil {
		return &intents.State{}
	}
	return st
}

// recoveryOf is sess's recovery slot (an empty one when it has none).
func recoveryOf(t testing.TB, sess *state.Session) *recovery.State {
	t.Helper()
	st, err := recovery.Of(sess)
	require.NoError(t, err)
	if st == nil {
		return &recovery.State{}
	}
	return st
}
