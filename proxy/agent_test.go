package proxy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// TestAgentOf names clients from what they really send: the CLIs' User-Agent
// strings (as their sources build them), the VS Code agents' default
// headers, the official SDKs' User-Agent strings.
func TestAgentOf(t *testing.T) {
	cases := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"claude code", map[string]string{"User-Agent": "claude-cli/2.1.90 (external, cli)", "x-app": "cli"}, "claude-code"},
		{"claude code sdk-ts entrypoint", map[string]string{"User-Agent": "claude-cli/2.0.14 (external, sdk-ts)"}, "claude-code"},
		{"codex", map[string]string{"User-Agent": "codex_cli_rs/0.58.0 (Windows 10.0.26200; x86_64) WindowsTerminal", "originator": "codex_cli_rs"}, "codex"},
		{"codex by originator", map[string]string{"User-Agent": "reqwest", "originator": "codex_vscode"}, "codex"},
		{"codex exec", map[string]string{"User-Agent": "codex_exec/0.60.1 (Mac OS 15.1.0; arm64) unknown (codex-exec; 0.60.1)"}, "codex"},
		{"gemini cli", map[string]string{"User-Agent": "GeminiCLI/0.24.0 (linux; x64)"}, "gemini-cli"},
		{"gemini cli behind the sdk", map[string]string{"User-Agent": "google-genai-sdk/1.30.0 gl-node/v22.17.0 GeminiCLI/0.24.0 (darwin; arm64)"}, "gemini-cli"},
		{"cline", map[string]string{"User-Agent": "Cline/3.38.1", "X-Title": "Cline"}, "cline"},
		{"cline on the anthropic sdk", map[string]string{"User-Agent": "Anthropic/JS 0.37.0", "HTTP-Referer": "https://cline.bot", "X-Title": "Cline"}, "cline"},
		{"roo code", map[string]string{"User-Agent": "RooCode/3.30.0", "X-Title": "Roo Code", "HTTP-Referer": "https://github.com/RooVetGit/Roo-Cline"}, "roo-code"},
		{"roo code on the openai sdk", map[string]string{"User-Agent": "OpenAI/JS 5.12.2", "X-Title": "Roo Code"}, "roo-code"},
		{"kilo code", map[string]string{"User-Agent": "Kilo-Code/4.116.1", "X-Title": "Kilo Code", "X-KiloCode-Version": "4.116.1"}, "kilo-code"},
		{"kilo code version header", map[string]string{"User-Agent": "OpenAI/JS 5.12.2", "X-KiloCode-Version": "4.116.1"}, "kilo-code"},
		{"anthropic go", map[string]string{"User-Agent": "Anthropic/Go 1.84.0"}, "anthropic-sdk-go"},
		{"anthropic python", map[string]string{"User-Agent": "Anthropic/Python 0.72.0"}, "anthropic-sdk-python"},
		{"anthropic js", map[string]string{"User-Agent": "Anthropic/JS 0.70.0"}, "anthropic-sdk-js"},
		{"openai go", map[string]string{"User-Agent": "OpenAI/Go 3.96.0"}, "openai-sdk-go"},
		{"openai python", map[string]string{"User-Agent": "OpenAI/Python 1.99.9"}, "openai-sdk-python"},
		{"genai go", map[string]string{"User-Agent": "google-genai-sdk/1.77.0 gl-go/go1.26.0", "x-goog-api-client": "google-genai-sdk/1.77.0 gl-go/go1.26.0"}, "google-genai-sdk-go"},
		{"genai python", map[string]string{"User-Agent": "python-httpx/0.28", "x-goog-api-client": "google-genai-sdk/1.41.0 gl-python/3.12.3"}, "google-genai-sdk-python"},
		{"genai js", map[string]string{"User-Agent": "google-genai-sdk/1.30.0 gl-node/v22.17.0"}, "google-genai-sdk-js"},
		{"genai other language", map[string]string{"User-Agent": "google-genai-sdk/1.0.0 gl-dotnet/8"}, "google-genai-sdk"},
		{"curl", map[string]string{"User-Agent": "curl/8.5.0"}, ""},
		{"nothing", map[string]string{}, ""},
		{"a title of another app", map[string]string{"User-Agent": "OpenAI/JS 5.12.2", "X-Title": "Takara Coder"}, "openai-sdk-js"},
	}
	for _, c := range cases {
		var h fasthttp.RequestHeader
		for k, v := range c.headers {
			h.Set(k, v)
		}
		require.Equal(t, c.want, agentOf(&h), c.name)
	}
}

func TestAgentOfAllocs(t *testing.T) {
	var h fasthttp.RequestHeader
	h.Set("User-Agent", "google-genai-sdk/1.77.0 gl-go/go1.26.0")
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = agentOf(&h) }))
}

func BenchmarkAgentOf(b *testing.B) {
	var h fasthttp.RequestHeader
	h.Set("User-Agent", "google-genai-sdk/1.77.0 gl-go/go1.26.0")
	b.ReportAllocs()
	for b.Loop() {
		_ = agentOf(&h)
	}
}
