package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
)

// rawRequest is a Messages request in wire form; stream asks for SSE and
// extra lines go in the header.
func rawRequest(h *harness, stream bool, extra ...string) string {
	body := `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Hello"}]}`
	if stream {
		body = `{"model":"claude-test","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`
	}
	var b strings.Builder
	fmt.Fprintf(&b, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		strings.TrimPrefix(h.URL, "http://"), len(body))
	for k, v := range anthropicHeaders() {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	for _, l := range extra {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

// readReply reads one whole reply from br.
func readReply(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 200, resp.StatusCode, string(b))
	return resp, string(b)
}

// A detached stream's connection serves the agent's next requests: streams
// and JSON replies in turn on one connection, a request pipelined behind a
// stream (answered after it, nothing lost), the overhead trailer for a
// client that takes trailers, and Connection: close honoured, with the
// features off and on; and the same on the wire with limits.detach_streams
// off (fasthttp's own stream path).
func TestDetachedStreamKeepsTheConnection(t *testing.T) {
	for _, tc := range []struct{ hooksOn, detach bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		hooksOn := tc.hooksOn
		t.Run(fmt.Sprintf("hooks=%v/detach=%v", tc.hooksOn, tc.detach), func(t *testing.T) {
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
				c.Topics.Enabled = hooksOn
				c.Limits.DetachStreams = tc.detach
			}})
			c, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
			br := bufio.NewReader(c)
			send := func(s string) {
				t.Helper()
				_, err := io.WriteString(c, s)
				require.NoError(t, err)
			}
			stream := func(resp *http.Response, body string) {
				t.Helper()
				require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), resp.Header.Get("Content-Type"))
				require.Equal(t, []string{"chunked"}, resp.TransferEncoding)
				require.True(t, strings.HasPrefix(body, "event: message_start\n"), body)
				require.True(t, strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), body)
				require.False(t, resp.Close, "the connection is kept")
			}

			for i := range 3 {
				send(rawRequest(h, true, "TE: trailers"))
				resp, body := readReply(t, br)
				stream(resp, body)
				require.Regexp(t, `^\d+\.\d{3}ms$`, resp.Trailer.Get("X-Shepherd-Overhead"), "stream %d's overhead trailer", i)
				require.NotEmpty(t, resp.Header.Get("X-Shepherd-Request-Id"))

				send(rawRequest(h, false))
				resp, body = readReply(t, br)
				require.Contains(t, body, `"type":"message"`)
				require.False(t, resp.Close)
			}

			// A JSON request and a stream pipelined behind a stream.
			send(rawRequest(h, true) + rawRequest(h, false) + rawRequest(h, true))
			resp, body := readReply(t, br)
			stream(resp, body)
			require.Empty(t, resp.Trailer.Get("X-Shepherd-Overhead"), "no trailer for a client that takes none")
			resp, body = readReply(t, br)
			require.Contains(t, body, `"type":"message"`)
			resp, body = readReply(t, br)
			stream(resp, body)

			// Connection: close ends the connection after the stream.
			send(rawRequest(h, true, "Connection: close"))
			resp, body = readReply(t, br)
			require.True(t, resp.Close)
			require.Contains(t, body, "message_stop")
			_, err = br.ReadByte()
			require.ErrorIs(t, err, io.EOF, "the connection is closed after the stream")
		})
	}
}
