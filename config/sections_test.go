package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks/intents"
)

func TestValidateIntents(t *testing.T) {
	c := Defaults()
	c.Intents.Enabled = "maybe"
	c.Intents.File = ""
	c.Intents.WorkspaceRoot = "relative/dir"
	c.Intents.AlwaysAllowed = []string{"Read", "not a tool"}
	c.Intents.PathArgs = []string{"Write:file_path", "nocolon"}
	c.Intents.OnError = "ignore"
	c.Intents.Routes.Gemini.WorkspaceRoot = "also/relative"
	var ve *ValidationError
	require.ErrorAs(t, c.Validate(), &ve)
	require.Equal(t, []string{
		"intents.enabled", "intents.file", "intents.workspace_root", "intents.always_allowed",
		"intents.path_args", "intents.on_error", "intents.routes.gemini.workspace_root",
	}, problemKeys(ve))
	require.Contains(t, ve.Error(), "nocolon")
}

func TestIntentsEnabledAcceptsBooleans(t *testing.T) {
	for body, want := range map[string]Switch{
		"intents:\n  enabled: true\n":     SwitchOn,
		"intents:\n  enabled: false\n":    SwitchOff,
		"intents:\n  enabled: auto\n":     SwitchAuto,
		"intents:\n  enabled: \"true\"\n": SwitchOn,
	} {
		c, err := Load(LoadOptions{File: writeFile(t, body), Env: []string{}})
		require.NoError(t, err, body)
		require.Equal(t, want, c.Intents.Enabled, body)
	}
	c, err := Load(LoadOptions{Env: []string{"SHEPHERD_INTENTS_ENABLED=false", "SHEPHERD_INTENTS_ON_ERROR=open",
		"SHEPHERD_INTENTS_PATH_ARGS=Write:file_path,apply_patch:patch(input)"}})
	require.NoError(t, err)
	require.Equal(t, SwitchOff, c.Intents.Enabled)
	require.Equal(t, intents.FailOpen, c.Intents.OnError)
	require.Equal(t, []string{"Write:file_path", "apply_patch:patch(input)"}, c.Intents.PathArgs)
	_, err = Load(LoadOptions{File: writeFile(t, "intents:\n  enabled: 1\n"), Env: []string{}})
	require.Error(t, err)
}

func TestValidateRecovery(t *testing.T) {
	c := Defaults()
	c.Recovery.MaxAttempts = 9
	c.Recovery.MinOutputTokens = -1
	c.Recovery.Strategy = []string{"claude-*=prefill", "gpt-*=guess", "nopattern"}
	c.Recovery.MaxOutputTokens = []string{"*=lots"}
	var ve *ValidationError
	require.ErrorAs(t, c.Validate(), &ve)
	require.Equal(t, []string{"recovery.max_attempts", "recovery.min_output_tokens", "recovery.strategy", "recovery.max_output_tokens"}, problemKeys(ve))
	require.Contains(t, ve.Error(), `"gpt-*=guess": strategy "guess" is not prefill or instruction`)
}

func TestValidateShellAndSideKeys(t *testing.T) {
	c := Defaults()
	c.Intents.ShellArgs = []string{"Bash:command", "shell:argv(", "x"}
	c.Intents.UnparsedCommands = "maybe"
	c.Features.SideRequests = "drop"
	var ve *ValidationError
	require.ErrorAs(t, c.Validate(), &ve)
	require.Equal(t, []string{"intents.shell_args", "intents.unparsed_commands", "features.side_requests"}, problemKeys(ve))
	require.Contains(t, ve.Error(), `"x"`)

	got, err := Load(LoadOptions{Env: []string{"SHEPHERD_INTENTS_UNPARSED_COMMANDS=allow",
		"SHEPHERD_FEATURES_SIDE_REQUESTS=inject", "SHEPHERD_INTENTS_SHELL_ARGS=Bash:command,shell:argv(command)@workdir"}})
	require.NoError(t, err)
	require.Equal(t, intents.UnparsedAllow, got.Intents.UnparsedCommands)
	require.Equal(t, SideRequestsInject, got.Features.SideRequests)
	require.Equal(t, []string{"Bash:command", "shell:argv(command)@workdir"}, got.Intents.ShellArgs)
}
