package apis

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// TestTable checks what every descriptor must hold: a unique name (a
// config key and metric label), at least one route, unique route names and
// paths across APIs, a codec with turn support, a terminal check, and
// exactly one error-shape API per provider.
func TestTable(t *testing.T) {
	names, routes, paths := map[string]bool{}, map[string]bool{}, map[string]bool{}
	errShapes := map[string]int{}
	for _, d := range All() {
		require.NotEmpty(t, d.Name)
		require.False(t, names[d.Name], "duplicate API name %s", d.Name)
		names[d.Name] = true
		got, err := Lookup(d.Name)
		require.NoError(t, err)
		require.Same(t, d, got)
		require.NotEmpty(t, d.Routes, d.Name)
		for _, r := range d.Routes {
			require.False(t, routes[r.Name], "duplicate route %s", r.Name)
			routes[r.Name] = true
			key := r.Path + "|" + r.ModelMethod
			require.False(t, paths[key], "duplicate route path %s", key)
			paths[key] = true
		}
		require.NotNil(t, d.NewCodec, d.Name)
		var _ rewrite.TurnCodec = d.Codec()
		keyer, keyed := any(d.Codec()).(rewrite.HistoryKeyer)
		require.True(t, keyed, "%s: the cache-integrity check needs the conversation's member", d.Name)
		require.Equal(t, keyer.ConversationKey(), d.Conversation, "%s: the index memo keys by the conversation", d.Name)
		require.NotNil(t, d.IsTerminal, d.Name)
		require.NotEmpty(t, d.Provider, d.Name)
		if d.ProviderErrors {
			errShapes[d.Provider]++
		}
		require.Same(t, ProviderErrors(d.Provider), ProviderErrors(d.Provider))
		require.NotNil(t, ProviderErrors(d.Provider), "provider %s has no error-shape API", d.Provider)
	}
	for p, n := range errShapes {
		require.Equal(t, 1, n, "provider %s", p)
	}
}

// TestNamesAreConfigKeys pins the names: they are config keys
// (intents.routes) and metric labels, so renaming one breaks deployments.
func TestNamesAreConfigKeys(t *testing.T) {
	var got []string
	for _, d := range All() {
		got = append(got, d.Name)
	}
	require.Equal(t, []string{"anthropic", "openai_chat", "openai_responses", "gemini"}, got)
}

func TestLookupUnknown(t *testing.T) {
	d, err := Lookup("openai_completions")
	require.Error(t, err)
	require.Nil(t, d)
	require.Contains(t, err.Error(), "openai_chat")
	require.Nil(t, ProviderErrors("mistral"))
}
