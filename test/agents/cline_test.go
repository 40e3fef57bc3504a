package agents

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"shepherd/bench/mock"
)

// clineCLI drives the Cline CLI headless (`cline --json <prompt>`, act mode,
// auto-approve) on the OpenAI Chat Completions API: its "openai" provider
// (OpenAI-compatible) configured by `cline auth --baseurl` into a private
// config directory.
type clineCLI struct{}

func (clineCLI) name() string      { return "cline" }
func (clineCLI) bin() string       { return "cline" }
func (clineCLI) api() string       { return "chat" }
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

func (c clineCLI) setup(t *testing.T, r *run) []string {
	env := []string{"CLINE_TELEMETRY_DISABLED=1", "CLINE_DISABLE_TELEMETRY=1", "POSTHOG_DISABLED=1"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nodeBin(), "cline"), "auth", "-p", clineProvider,
		"-k", "sk-agents-suite", "-m", "gpt-4o", "-b", r.Proxy+"/v1", "--config", filepath.Join(r.Home, ".cline"))
	cmd.Env = append([]string{"HOME=" + r.Home, "PATH=" + nodeBin() + ":/usr/bin:/bin"}, env...)
	cmd.Dir = r.Workdir
	out, err := cmd.CombinedOutput()
	t.Logf("cline auth: %s", out)
	require.NoError(t, err, "cline auth")
	return env
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
