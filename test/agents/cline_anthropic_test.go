package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// clineAnthropic drives the same Cline CLI as clineCLI on the Anthropic
// Messages API: its "anthropic" provider with baseUrl set to shepherd's /v1
// in the providers settings. On that provider Cline declares an "editor"
// tool (path, old_text, new_text) instead of apply_patch.
type clineAnthropic struct{ clineCLI }

func (clineAnthropic) name() string      { return "cline-anthropic" }
func (clineAnthropic) api() string       { return "anthropic" }
func (clineAnthropic) writeTool() string { return "editor" }

// writeCall is an editor call creating path: no old_text creates a missing
// file with new_text.
func (clineAnthropic) writeCall(path, content string) mock.ToolCall {
	b, _ := json.Marshal(map[string]string{"path": path, "new_text": content})
	return mock.ToolCall{Name: "editor", Args: string(b)}
}

// clineAnthropicModel is the model id the runs ask for.
const clineAnthropicModel = "claude-sonnet-4-5"

// clineAnthropicProviders is the providers.json of every run (as `cline auth
// -p anthropic -b <url> -k <key>` writes it); %s is shepherd's /v1 URL, the
// provider's default being https://api.anthropic.com/v1.
const clineAnthropicProviders = `{
  "version": 1,
  "lastUsedProvider": "anthropic",
  "modes": {},
  "providers": {
    "anthropic": {
      "settings": {"provider": "anthropic", "apiKey": "sk-ant-agents-suite", "model": %q, "baseUrl": %q},
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "manual"
    }
  }
}
`

func (clineAnthropic) setup(t *testing.T, r *run) []string {
	dir := filepath.Join(r.Home, ".cline", "data", "settings")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	body := sprintf(clineAnthropicProviders, clineAnthropicModel, r.Proxy+"/v1")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "providers.json"), []byte(body), 0o600))
	return []string{"CLINE_TELEMETRY_DISABLED=1", "POSTHOG_DISABLED=1"}
}

func (clineAnthropic) args(r *run, prompt string) []string {
	return []string{"--json", "-P", "anthropic", "-m", clineAnthropicModel, "--config", filepath.Join(r.Home, ".cline"),
		"-c", r.Workdir, "--auto-approve", "true", prompt}
}
