package gemini

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeminiStatus checks the Google RPC status names of HTTP statuses.
func TestGeminiStatus(t *testing.T) {
	require.Equal(t, "PERMISSION_DENIED", geminiStatus(403))
	require.Equal(t, "NOT_FOUND", geminiStatus(404))
	require.Equal(t, "RESOURCE_EXHAUSTED", geminiStatus(429))
	require.Equal(t, "INTERNAL", geminiStatus(500))
	require.Equal(t, "DEADLINE_EXCEEDED", geminiStatus(504))
	require.Equal(t, "UNAUTHENTICATED", geminiStatus(401))
}
