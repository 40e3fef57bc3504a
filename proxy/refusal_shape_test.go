package proxy_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/config"
)

// requireAPIErrorShape checks that body is an error in the named API's own
// shape: Anthropic {"type":"error","error":{"type","message"}}, OpenAI
// {"error":{"message","type"}}, Gemini {"error":{"code","message","status"}}.
func requireAPIErrorShape(t *testing.T, api string, status int, body []byte) {
	t.Helper()
	require.True(t, gjson.ValidBytes(body), "not JSON: %q", body)
	e := gjson.GetBytes(body, "error")
	require.NotEmpty(t, e.Get("message").String(), "%s error without message: %s", api, body)
	switch api {
	case "anthropic":
		require.Equal(t, "error", gjson.GetBytes(body, "type").String(), "%s", body)
		require.NotEmpty(t, e.Get("type").String(), "%s", body)
		require.False(t, e.Get("code").Exists(), "%s", body)
	case "openai":
		require.False(t, gjson.GetBytes(body, "type").Exists(), "%s", body)
		require.NotEmpty(t, e.Get("type").String(), "%s", body)
		require.False(t, e.Get("status").Exists(), "%s", body)
	case "gemini":
		require.Equal(t, int64(status), e.Get("code").Int(), "%s", body)
		require.NotEmpty(t, e.Get("status").String(), "%s", body)
	}
}

// TestRefusalsUseTheRouteAPIShape: every refusal fasthttp makes before the
// handler runs (unparsable header or request line, bad chunking, over-limit
// body announced or chunked, header over the read buffer) answers over raw
// TCP in the error shape of the API the path serves, with the status that
// names the problem. No request carries a header naming the API, so the
// path alone decides.
func TestRefusalsUseTheRouteAPIShape(t *testing.T) {
	const maxBody = 64 << 10
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Limits.MaxBodyBytes = maxBody }})
	addr := strings.TrimPrefix(h.URL, "http://")
	paths := map[string]string{
		"anthropic": "/v1/messages",
		"openai":    "/v1/chat/completions",
		"gemini":    "/v1beta/models/g:streamGenerateContent?alt=sse",
	}
	head := "Host: shepherd\r\n"
	for api, path := range paths {
		reqs := map[string]struct {
			raw    string
			status int
		}{
			"invalid_header_value": {"POST " + path + " HTTP/1.1\r\n" + head + "X-Bad: a\x01b\r\nContent-Length: 2\r\n\r\n{}", 400},
			"invalid_header_key":   {"POST " + path + " HTTP/1.1\r\n" + head + "Bad\x01Key: v\r\nContent-Length: 2\r\n\r\n{}", 400},
			"missing_host":         {"POST " + path + " HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 400},
			"bad_chunking":         {"POST " + path + " HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400},
			"oversize_length":      {"POST " + path + " HTTP/1.1\r\n" + head + "Content-Length: 70000\r\n\r\n{}", 413},
			"oversize_chunked": {"POST " + path + " HTTP/1.1\r\n" + head + "Transfer-Encoding: chunked\r\n\r\n" +
				"11170\r\n" + strings.Repeat("a", 0x11170) + "\r\n0\r\n\r\n", 413},
			"oversize_header": {"POST " + path + " HTTP/1.1\r\n" + head + "X-Pad: " + strings.Repeat("p", 20<<10) + "\r\n\r\n", 431},
		}
		for name, rq := range reqs {
			t.Run(api+"/"+name, func(t *testing.T) {
				out := rawRoundTrip(t, addr, rq.raw)
				resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(out)), nil)
				require.NoError(t, err, "answer: %q", out)
				body, _ := io.ReadAll(resp.Body)
				require.Equal(t, rq.status, resp.StatusCode, "answer: %q", out)
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				requireAPIErrorShape(t, api, resp.StatusCode, body)
			})
		}
	}
}
