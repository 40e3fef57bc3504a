package agents

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// codexCLI drives `codex exec` (Codex CLI) on the OpenAI Responses API with
// its built-in OpenAI provider pointed at shepherd by openai_base_url (it
// ignores OPENAI_BASE_URL). That provider first tries a WebSocket upgrade on
// GET /v1/responses; shepherd's 426 sends it to HTTP at once.
type codexCLI struct{}

func (codexCLI) name() string      { return "codex" }
func (codexCLI) bin() string       { return "codex" }
func (codexCLI) api() string       { return "openai_responses" }
func (codexCLI) writeTool() string { return "apply_patch" }

// writeCall is an apply_patch call (a free-form custom tool) adding path.
func (codexCLI) writeCall(path, content string) mock.ToolCall {
	return mock.ToolCall{Name: "apply_patch", Custom: true,
		Args: "*** Begin Patch\n*** Add File: " + path + "\n+" + content + "\n*** End Patch\n"}
}

// codexConfig is the config.toml of every run; %s is shepherd's /v1 URL.
const codexConfig = `model = "gpt-5.5"
openai_base_url = %q
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
cli_auth_credentials_store = "file"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"
`

func (codexCLI) setup(t *testing.T, r *run) []string {
	home := filepath.Join(r.Home, ".codex")
	require.NoError(t, os.MkdirAll(home, 0o755))
	cfg := []byte(sprintf(codexConfig, r.Proxy+"/v1"))
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), cfg, 0o644))
	return []string{
		"CODEX_HOME=" + home,
		"OPENAI_API_KEY=sk-agents-suite",
		"CODEX_API_KEY=sk-agents-suite",
		"RUST_LOG=warn",
	}
}

func (codexCLI) args(r *run, prompt string) []string {
	return []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", r.Workdir, prompt}
}

// answer is the text of the last agent_message item of --json.
func (codexCLI) answer(stdout []byte) string {
	out := ""
	for _, line := range splitLines(stdout) {
		if gjson.GetBytes(line, "item.type").String() == "agent_message" {
			out = gjson.GetBytes(line, "item.text").String()
		}
	}
	return out
}
