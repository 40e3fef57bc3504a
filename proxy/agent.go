package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// Agent names, as recognised by agentOf. They are for display and events
// only: no behaviour may depend on them.
const (
	agentClaudeCode = "claude-code"
	agentCodex      = "codex"
	agentGeminiCLI  = "gemini-cli"
	agentCline      = "cline"
	agentRooCode    = "roo-code"
	agentKiloCode   = "kilo-code"
)

// agentPrefixes maps the start of a User-Agent (any case) to its client,
// first match wins. The CLIs set their own User-Agent over their SDK's: claude-cli/2.1.90
// (external, cli); codex_cli_rs/0.58.0 (Ubuntu 24.04; x86_64) WindowsTerminal
// (its originator, codex_vscode and others, leads the string); Cline/3.x,
// RooCode/3.x and Kilo-Code/4.x (their default headers). The SDKs' own:
// Anthropic/JS 0.70.0, OpenAI/Python 1.99.0, google-genai-sdk/1.30.0
// gl-node/v22.
var agentPrefixes = []struct {
	prefix []byte
	name   string
}{
	{[]byte("claude-cli/"), agentClaudeCode},
	{[]byte("codex_"), agentCodex},
	{[]byte("codex-"), agentCodex},
	{[]byte("geminicli/"), agentGeminiCLI},
	{[]byte("kilo-code/"), agentKiloCode},
	{[]byte("roocode/"), agentRooCode},
	{[]byte("cline/"), agentCline},
}

// sdkPrefixes maps the start of an official SDK's User-Agent (any case) to
// the SDK, for requests no agent was recognised in.
var sdkPrefixes = []struct {
	prefix []byte
	name   string
}{
	{[]byte("anthropic/js"), "anthropic-sdk-js"},
	{[]byte("anthropic/python"), "anthropic-sdk-python"},
	{[]byte("anthropic/go"), "anthropic-sdk-go"},
	{[]byte("anthropic/java"), "anthropic-sdk-java"},
	{[]byte("anthropic/ruby"), "anthropic-sdk-ruby"},
	{[]byte("openai/js"), "openai-sdk-js"},
	{[]byte("openai/python"), "openai-sdk-python"},
	{[]byte("openai/go"), "openai-sdk-go"},
	{[]byte("openai/java"), "openai-sdk-java"},
	{[]byte("openai/ruby"), "openai-sdk-ruby"},
}

// agentTitles maps the X-Title header the VS Code agents send (for
// OpenRouter) to the client, for requests whose User-Agent is their SDK's.
var agentTitles = map[string]string{
	"Cline":     agentCline,
	"Roo Code":  agentRooCode,
	"Kilo Code": agentKiloCode,
}

// genaiLanguages maps the language label of the Google Gen AI SDK
// (gl-node/v22, gl-python/3.12, gl-go/go1.26) to its name.
var genaiLanguages = []struct {
	label []byte
	name  string
}{
	{[]byte("gl-node/"), "google-genai-sdk-js"},
	{[]byte("gl-python/"), "google-genai-sdk-python"},
	{[]byte("gl-go/"), "google-genai-sdk-go"},
	{[]byte("gl-java/"), "google-genai-sdk-java"},
}

// agentOf names the client of a request from its User-Agent and the
// agents' own headers (Codex's originator, the VS Code agents' X-Title,
// Gemini CLI's User-Agent anywhere in the string since the SDK may lead
// it), or "" when none is recognised. A CLI wins over the SDK it is built
// on.
func agentOf(h *fasthttp.RequestHeader) string {
	ua := h.UserAgent()
	if bytes.HasPrefix(h.Peek("originator"), []byte("codex")) {
		return agentCodex
	}
	for _, p := range agentPrefixes {
		if hasPrefixFold(ua, p.prefix) {
			return p.name
		}
	}
	if bytes.Contains(ua, []byte("GeminiCLI/")) {
		return agentGeminiCLI
	}
	if name, ok := agentTitles[string(h.Peek("X-Title"))]; ok {
		return name
	}
	if len(h.Peek("X-KiloCode-Version")) > 0 {
		return agentKiloCode
	}
	for _, p := range sdkPrefixes {
		if hasPrefixFold(ua, p.prefix) {
			return p.name
		}
	}
	for _, v := range [][]byte{ua, h.Peek("x-goog-api-client")} {
		if !bytes.Contains(v, []byte("google-genai-sdk/")) {
			continue
		}
		for _, g := range genaiLanguages {
			if bytes.Contains(v, g.label) {
				return g.name
			}
		}
		return "google-genai-sdk"
	}
	return ""
}

// hasPrefixFold reports whether s starts with the lower-case ASCII prefix,
// in any case.
func hasPrefixFold(s, prefix []byte) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i, c := range prefix {
		b := s[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != c {
			return false
		}
	}
	return true
}
