package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRouteMatches(t *testing.T) {
	exact := Route{Name: "messages", Path: "/v1/messages"}
	require.True(t, exact.Matches([]byte("/v1/messages")))
	require.False(t, exact.Matches([]byte("/v1/messages/count_tokens")))
	require.False(t, exact.Matches([]byte("/v1/messages/")))

	model := Route{Name: "generate_content", ModelMethod: ":generateContent"}
	for _, p := range []string{"/v1beta/models/gemini-2.5-pro:generateContent", "/v1/models/x:generateContent", "/v1beta/tunedModels/a/models/b:generateContent"} {
		require.True(t, model.Matches([]byte(p)), p)
	}
	for _, p := range []string{"/v2/models/x:generateContent", "/v1beta/x:generateContent", "/v1beta/models/x:streamGenerateContent", "/v1beta/models/x:generateContent/"} {
		require.False(t, model.Matches([]byte(p)), p)
	}
	require.False(t, (&Route{Name: "none"}).Matches([]byte("/v1/messages")), "a route with neither path nor method matches nothing")
}

func TestIsTerminalEventWithoutAPI(t *testing.T) {
	require.True(t, IsTerminalEvent(nil, &Event{Data: []byte(`{}`)}), "a stream shepherd does not parse ends anywhere")
}
