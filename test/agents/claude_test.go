package agents

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// claudeCode drives `claude -p` (Claude Code) on the Anthropic Messages API.
type claudeCode struct{}

func (claudeCode) name() string      { return "claude-code" }
func (claudeCode) bin() string       { return "claude" }
func (claudeCode) api() string       { return "anthropic" }
func (claudeCode) writeTool() string { return "Write" }

func (claudeCode) writeCall(path, content string) mock.ToolCall {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return mock.ToolCall{Name: "Write", Args: string(b)}
}

func (claudeCode) setup(t *testing.T, r *run) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + r.Proxy,
		"ANTHROPIC_API_KEY=sk-ant-agents-suite",
		"ANTHROPIC_MODEL=claude-sonnet-4-5",
		"ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5",
		"CLAUDE_CONFIG_DIR=" + r.Home + "/.claude",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_NON_ESSENTIAL_MODEL_CALLS=1",
		"CLAUDE_CODE_ENABLE_TELEMETRY=0",
		// --dangerously-skip-permissions refuses to run as root outside a sandbox.
		"IS_SANDBOX=1",
	}
}

func (claudeCode) args(r *run, prompt string) []string {
	return []string{"-p", prompt, "--output-format", "json", "--dangerously-skip-permissions", "--max-turns", "6"}
}

// answer reads the "result" of --output-format json.
func (claudeCode) answer(stdout []byte) string {
	for _, line := range splitLines(stdout) {
		if r := gjson.GetBytes(line, "result"); r.Exists() {
			return r.String()
		}
	}
	return string(stdout)
}
