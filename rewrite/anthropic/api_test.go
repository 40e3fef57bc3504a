package anthropic

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnthropicErrorType checks the Anthropic error.type of HTTP statuses.
func TestAnthropicErrorType(t *testing.T) {
	require.Equal(t, "authentication_error", anthropicErrorType(401))
	require.Equal(t, "not_found_error", anthropicErrorType(404))
	require.Equal(t, "request_too_large", anthropicErrorType(413))
	require.Equal(t, "rate_limit_error", anthropicErrorType(429))
	require.Equal(t, "api_error", anthropicErrorType(500))
	require.Equal(t, "timeout_error", anthropicErrorType(504))
	require.Equal(t, "permission_error", anthropicErrorType(403))
}
