package intents

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPolicySources(t *testing.T) {
	var in Config
	in.SetDefaults()
	in.Routes.Gemini = Route{WorkspaceRoot: "/srv/other"}
	in.Routes.OpenAIChat = Route{File: "/etc/shepherd/chat.yaml"}
	src := in.PolicySources("/work/app")
	require.Equal(t, PolicySource{File: filepath.FromSlash("/work/app/.orchestration/active_intents.yaml"), Root: "/work/app"}, src["anthropic"])
	require.Equal(t, PolicySource{File: "/etc/shepherd/chat.yaml", Root: "/work/app"}, src["openai_chat"])
	require.Equal(t, PolicySource{File: "/srv/other/.orchestration/active_intents.yaml", Root: "/srv/other"}, src["gemini"])
	in.WorkspaceRoot = "/ws"
	require.Equal(t, "/ws", in.PolicySources("/ignored")["openai_responses"].Root)
}
