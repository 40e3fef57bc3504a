package proxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shapeCheck asserts body is a 400 error in one API's error shape.
type shapeCheck func(t *testing.T, body string)

func anthropicShape(t *testing.T, body string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, "error", e.Type, body)
	require.Equal(t, "invalid_request_error", e.Error.Type, body)
	require.NotEmpty(t, e.Error.Message)
}

func openAIShape(t *testing.T, body string) {
	t.Helper()
	var e struct {
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, "invalid_request_error", e.Error.Type, body)
	require.NotEmpty(t, e.Error.Message)
}

func geminiShape(t *testing.T, body string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int
			Status  string
			Message string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, "INVALID_ARGUMENT", e.Error.Status, body)
	require.NotEmpty(t, e.Error.Message)
}

// trustAPI is one wire API: a valid route, its headers and error shape.
type trustAPI struct {
	name    string
	path    string
	headers string
	body    string
	shape   shapeCheck
}

func trustAPIs() []trustAPI {
	return []trustAPI{
		{"anthropic", "/v1/messages", "X-Api-Key: sk-ant-test\r\nAnthropic-Version: 2023-06-01\r\n",
			`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, anthropicShape},
		{"chat", "/v1/chat/completions", "Authorization: Bearer sk-test\r\n",
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, openAIShape},
		{"responses", "/v1/responses", "Authorization: Bearer sk-test\r\n",
			`{"model":"m","input":"hi"}`, openAIShape},
		{"gemini", "/v1beta/models/g:generateContent", "X-Goog-Api-Key: g-test\r\n",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, geminiShape},
	}
}

func rawPost(target, headers, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: shepherd\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		target, headers, len(body), body)
}

// TestPathEscapeRefused sends, over raw TCP (an HTTP client would clean the
// path), request targets with dot-segments, encoded dots, slashes and
// backslashes on every API, and checks each is answered 400 in the API's
// error shape and never reaches the upstream; a clean path is forwarded
// byte for byte behind the upstream's prefix.
func TestPathEscapeRefused(t *testing.T) {
	up := newRecordingUpstream(t)
	addr := startTrustProxy(t, up, nil)
	// {p} is the API's own model path.
	escapes := []string{
		"{p}/../../../x",
		"/v1/../{p}",
		"{p}/%2e%2e/%2e%2e/x",
		"{p}/%2E./x",
		"{p}/.%2E/x",
		"{p}%2f..%2f..%2fx",
		"{p}%2F..%2Fx",
		"{p}%5c..%5cx",
		"{p}\\..\\x",
		"/{p}",
		"{p}/./x",
		"{p}/.",
	}
	for _, api := range trustAPIs() {
		for _, e := range escapes {
			target := strings.ReplaceAll(e, "{p}", api.path)
			t.Run(api.name+target, func(t *testing.T) {
				out, _ := rawExchange(t, addr, rawPost(target, api.headers+"Connection: close\r\n", api.body), 10*time.Second)
				require.True(t, strings.HasPrefix(out, "HTTP/1.1 400 "), "status line of %q: %q", target, out)
				api.shape(t, rawBody(out))
			})
		}
	}
	require.Empty(t, up.requests(), "a refused path reached the upstream")

	for _, api := range trustAPIs() {
		out, _ := rawExchange(t, addr, rawPost(api.path+"?beta=true", api.headers+"Connection: close\r\n", api.body), 10*time.Second)
		require.True(t, strings.HasPrefix(out, "HTTP/1.1 200 "), out)
	}
	reqs := up.requests()
	require.Len(t, reqs, 4)
	for i, api := range trustAPIs() {
		require.Equal(t, "/base"+api.path+"?beta=true", reqs[i].Target)
	}
}
