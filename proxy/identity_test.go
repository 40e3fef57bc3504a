package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

func TestResolveSessionOrder(t *testing.T) {
	jsonUserID := `{"device_id":"d1","account_uuid":"a1","session_id":"0b7f-json"}`
	legacyUserID := "user_abc123_account_7e1f_session_9c2d-legacy"
	tests := []struct {
		name    string
		headers map[string]string
		view    *conv.Request
		want    string
		source  sessionSource
	}{
		{"configured header wins", map[string]string{"X-Session-Id": "cfg", "X-Claude-Code-Session-Id": "cc"}, &conv.Request{PromptCacheKey: "pck"}, "cfg", sourceHeader},
		{"claude code header", map[string]string{"X-Claude-Code-Session-Id": "cc", "session-id": "codex"}, nil, "cc", sourceClaudeCode},
		{"codex hyphenated", map[string]string{"session-id": "codex-new", "thread-id": "t"}, nil, "codex-new", sourceCodexHeader},
		{"codex underscore", map[string]string{"session_id": "codex-old"}, nil, "codex-old", sourceCodexHeader},
		{"codex thread id", map[string]string{"thread-id": "thr"}, nil, "thr", sourceCodexHeader},
		{"metadata json", nil, &conv.Request{MetadataUserID: jsonUserID, PromptCacheKey: "pck"}, "0b7f-json", sourceMetadata},
		{"metadata legacy", nil, &conv.Request{MetadataUserID: legacyUserID}, "9c2d-legacy", sourceMetadata},
		{"opaque user id skipped", nil, &conv.Request{MetadataUserID: "u_4f2a", PromptCacheKey: "pck"}, "pck", sourceCacheKey},
		{"json user id without session", nil, &conv.Request{MetadataUserID: `{"device_id":"d"}`, Fingerprint: "ab12"}, "fp-ab12", sourceFingerprint},
		{"prompt cache key", nil, &conv.Request{PromptCacheKey: "conv-1", Fingerprint: "ab12"}, "conv-1", sourceCacheKey},
		{"fingerprint", nil, &conv.Request{Fingerprint: "ab12"}, "fp-ab12", sourceFingerprint},
		{"nothing", nil, nil, "", sourceNone},
		{"opening", nil, &conv.Request{Messages: []conv.Message{{Role: conv.RoleUser}}}, "fp-open-", sourceOpening},
		{"header beats opening", map[string]string{"X-Session-Id": "cfg"}, &conv.Request{}, "cfg", sourceHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req fasthttp.Request
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			var hints *rewrite.SessionHints
			fp := func() (string, bool) { return "", false }
			if tt.view != nil {
				hints = &rewrite.SessionHints{MetadataUserID: tt.view.MetadataUserID, PromptCacheKey: tt.view.PromptCacheKey}
				fp = func() (string, bool) { return tt.view.Fingerprint, tt.view.Fingerprint == "" && tt.view.Opening() }
			}
			got, src := resolveSession(&req.Header, "X-Session-Id", hints, fp)
			require.Equal(t, tt.source, src)
			if src == sourceOpening {
				require.Regexp(t, `^fp-open-[0-9a-f]{32}$`, got)
				again, _ := resolveSession(&req.Header, "X-Session-Id", hints, fp)
				require.NotEqual(t, got, again, "every opening request gets its own session")
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTenantOfHashesCredential(t *testing.T) {
	mk := func(h, v string) *fasthttp.Request {
		r := &fasthttp.Request{}
		r.SetRequestURI("http://x/v1/messages")
		if h != "" {
			r.Header.Set(h, v)
		}
		return r
	}
	a := tenantOf(mk("X-Api-Key", "sk-ant-secret-1"))
	b := tenantOf(mk("X-Api-Key", "sk-ant-secret-2"))
	require.NotEqual(t, a, b)
	require.Equal(t, a, tenantOf(mk("X-Api-Key", "sk-ant-secret-1")))
	require.NotContains(t, a, "secret")
	require.Len(t, a, 32)
	require.Equal(t, "anonymous", tenantOf(mk("", "")))
	bearer := tenantOf(mk("Authorization", "Bearer tok"))
	require.NotEqual(t, "anonymous", bearer)
	q := &fasthttp.Request{}
	q.SetRequestURI("http://x/v1beta/models/m:generateContent?key=gkey")
	require.NotEqual(t, "anonymous", tenantOf(q))
	require.Equal(t, tenantOf(mk("X-Goog-Api-Key", "gkey")), tenantOf(q), "the same Gemini key in header or query is one tenant")

	// The namespace is stable across versions (stored sessions are keyed
	// by it): the first half of SHA-256("shepherd-tenant\x00" + credential),
	// in hex, for short and long credentials alike.
	for _, cred := range []string{"sk-ant-secret-1", strings.Repeat("k", 1000)} {
		sum := sha256.Sum256([]byte("shepherd-tenant\x00" + cred))
		require.Equal(t, hex.EncodeToString(sum[:16]), tenantOf(mk("X-Api-Key", cred)))
	}
	if !raceEnabled { // allocation counts are not meaningful under -race
		r := mk("X-Api-Key", "sk-ant-secret-1")
		require.Equal(t, 1.0, testing.AllocsPerRun(50, func() { _ = tenantOf(r) }), "one allocation: the string")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		method, path string
		anthropic    bool
		goog         bool
		want         string
		provider     Provider
	}{
		{"POST", "/v1/messages", false, false, "messages", ProviderAnthropic},
		{"POST", "/v1/messages/count_tokens", false, false, "count_tokens", ProviderAnthropic},
		{"POST", "/v1/chat/completions", false, false, "chat_completions", ProviderOpenAI},
		{"POST", "/v1/responses", false, false, "responses", ProviderOpenAI},
		{"POST", "/v1beta/models/gemini-2.5-pro:generateContent", false, false, "generate_content", ProviderGemini},
		{"POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", false, false, "stream_generate_content", ProviderGemini},
		{"GET", "/v1/models", false, false, "passthrough", ProviderOpenAI},
		{"GET", "/v1/models", true, false, "passthrough", ProviderAnthropic},
		{"GET", "/v1beta/models", false, false, "passthrough", ProviderGemini},
		{"POST", "/v1beta/models/m:countTokens", false, false, "passthrough", ProviderGemini},
		{"GET", "/v1/messages", true, false, "passthrough", ProviderAnthropic},
		{"GET", "/favicon.ico", false, false, "not_found", ProviderOpenAI},
		{"POST", "/v2/messages", true, false, "not_found", ProviderAnthropic},
	}
	for _, tt := range tests {
		rt := classify([]byte(tt.method), []byte(tt.path), tt.anthropic, tt.goog)
		require.Equal(t, tt.want, rt.name, tt.path)
		require.Equal(t, tt.provider, rt.provider, tt.path)
	}
}
