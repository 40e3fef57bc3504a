package proxy_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// requireAPIErrorShape checks that body is an error in the API's own shape
// (the kit driver's ErrorShape): Anthropic {"type":"error","error":{"type",
// "message"}}, OpenAI {"error":{"message","type"}}, Gemini
// {"error":{"code","message","status"}}.
func requireAPIErrorShape(t *testing.T, d kit.Driver, status int, body []byte) {
	t.Helper()
	require.NoError(t, d.ErrorShape(status, body), "%s", d.Name())
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
	head := "Host: shepherd\r\n"
	for _, d := range kit.Drivers() {
		api, path := d.Name(), d.Path("g", true)
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
				requireAPIErrorShape(t, d, resp.StatusCode, body)
			})
		}
	}
}
