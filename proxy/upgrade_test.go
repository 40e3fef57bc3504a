package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// A WebSocket upgrade (Codex CLI's GET /v1/responses) is answered with 426
// in the caller's error shape, the connection is closed, and nothing reaches
// the upstream; raw TCP so that no client library hides the handshake.
func TestUpgradeWebSocketRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	cases := []struct {
		name, path, extra, errPath string
	}{
		{"codex responses", "/v1/responses", "Authorization: Bearer sk-test\r\n", "error.message"},
		{"anthropic", "/v1/messages", "anthropic-version: 2023-06-01\r\n", "error.message"},
		{"gemini", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "x-goog-api-key: k\r\n", "error.status"},
		{"upgrade list, any case", "/v1/responses", "", "error.message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			upgrade := "websocket"
			if c.name == "upgrade list, any case" {
				upgrade = "h2c, WebSocket"
			}
			req := "GET " + c.path + " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: " + upgrade + "\r\n" +
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + c.extra + "\r\n"
			_, err = io.WriteString(conn, req)
			require.NoError(t, err)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, 426, resp.StatusCode, string(body))
			require.True(t, resp.Close, "the connection must close after the refusal")
			require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
			require.True(t, gjson.GetBytes(body, c.errPath).Exists(), string(body))
			_, err = br.ReadByte()
			require.ErrorIs(t, err, io.EOF, "nothing follows the 426")
		})
	}
	require.Empty(t, h.mock.Requests(), "an upgrade must never reach the upstream")

	// Without Upgrade the same GET is an ordinary pass-through.
	resp, _ := do(t, "GET", h.URL+"/v1/models", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Len(t, h.mock.Requests(), 1)
}
