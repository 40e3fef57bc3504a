package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// clineCLI drives the Cline CLI headless (`cline --json <prompt>`, act mode,
// auto-approve) on the OpenAI Chat Completions API: its "openai" provider
// (OpenAI-compatible) configured as `cline auth --baseurl` would, in a
// private config directory.
type clineCLI struct{}

func (clineCLI) name() string      { return "cline" }
func (clineCLI) bin() string       { return "cline" }
func (clineCLI) api() string       { return "openai_chat" }
func (clineCLI) writeTool() string { return "apply_patch" }

// writeCall is an apply_patch call (a function tool taking the patch as
// "input") adding path.
func (clineCLI) writeCall(path, content string) mock.ToolCall {
	b, _ := json.Marshal(map[string]string{
		"input": "*** Begin Patch\n*** Add File: " + path + "\n+" + content + "\n*** End Patch\n"})
	return mock.ToolCall{Name: "apply_patch", Args: string(b)}
}

// clineProvider is Cline's id of the OpenAI-compatible provider.
const clineProvider = "openai"

// clineProviders is what `cline auth -p openai -b <url> -k <key> -m gpt-4o
// --config <dir>` writes to <dir>/data/settings/providers.json; writing it
// directly saves a CLI start per run. %s is shepherd's /v1 URL.
const clineProviders = `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "modes": {},
  "providers": {
    "openai-compatible": {
      "settings": {"provider": "openai-compatible", "apiKey": "sk-agents-suite", "model": "gpt-4o", "baseUrl": %q},
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "manual"
    }
  }
}
`

func (clineCLI) setup(t *testing.T, r *run) []string {
	dir := filepath.Join(r.Home, ".cline", "data", "settings")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "providers.json"), []byte(sprintf(clineProviders, r.Proxy+"/v1")), 0o600))
	return []string{"CLINE_TELEMETRY_DISABLED=1", "POSTHOG_DISABLED=1"}
}

func (clineCLI) args(r *run, prompt string) []string {
	return []string{"--json", "-P", clineProvider, "-m", "gpt-4o", "--config", filepath.Join(r.Home, ".cline"),
		"-c", r.Workdir, "--auto-approve", "true", prompt}
}

// answer is the text of the run_result line of --json.
func (clineCLI) answer(stdout []byte) string {
	out := ""
	for _, line := range splitLines(stdout) {
		if gjson.GetBytes(line, "type").String() == "run_result" {
			out = gjson.GetBytes(line, "text").String()
		}
	}
	return out
}
