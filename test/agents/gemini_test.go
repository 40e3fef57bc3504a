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

// geminiCLI drives `gemini -p` (gemini-cli) on the Gemini API, pointed at
// shepherd by GOOGLE_GEMINI_BASE_URL. Without security.auth.selectedType in
// settings.json it stops to ask for an auth method even with GEMINI_API_KEY.
type geminiCLI struct{}

func (geminiCLI) name() string      { return "gemini-cli" }
func (geminiCLI) bin() string       { return "gemini" }
func (geminiCLI) api() string       { return "gemini" }
func (geminiCLI) writeTool() string { return "write_file" }

func (geminiCLI) writeCall(path, content string) mock.ToolCall {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return mock.ToolCall{Name: "write_file", Args: string(b)}
}

// geminiSettings is ~/.gemini/settings.json of every run.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "telemetry": {"enabled": false},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "model": {"name": "gemini-2.5-flash"},
  "ui": {"hideTips": true, "hideBanner": true}
}
`

func (geminiCLI) setup(t *testing.T, r *run) []string {
	dir := filepath.Join(r.Home, ".gemini")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "settings.json"), []byte(geminiSettings), 0o644))
	return []string{
		"GEMINI_API_KEY=agents-suite-key",
		"GOOGLE_GEMINI_BASE_URL=" + r.Proxy,
		"GEMINI_CLI_NO_RELAUNCH=true",
		"GEMINI_TELEMETRY_ENABLED=false",
	}
}

func (geminiCLI) args(r *run, prompt string) []string {
	return []string{"-p", prompt, "--output-format", "json", "--yolo", "-m", "gemini-2.5-flash"}
}

// answer reads "response" of --output-format json.
func (geminiCLI) answer(stdout []byte) string {
	if i := indexByte(stdout, '{'); i >= 0 {
		if r := gjson.GetBytes(stdout[i:], "response"); r.Exists() {
			return r.String()
		}
	}
	return string(stdout)
}
