package proxy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chunked encodes body as one chunk and the last chunk.
func chunked(body string) string {
	return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
}

// TestAmbiguousFramingClosesConnection sends, over raw TCP, a request whose
// length the headers state ambiguously with a valid request pipelined right
// behind it, and checks the first is answered 400 in the API's error shape,
// the connection is closed, and neither request reaches the upstream (the
// second one is the smuggled request).
func TestAmbiguousFramingClosesConnection(t *testing.T) {
	up := newRecordingUpstream(t)
	addr := startTrustProxy(t, up, nil)
	type framing struct {
		name    string
		headers string // framing headers
		body    string // the body as sent, given the JSON body
		// parser: fasthttp's header parser refuses it, before the path and
		// headers are parsed, so the error shape cannot follow the API.
		parser bool
	}
	cases := func(body string) []framing {
		return []framing{
			{"cl_then_te", fmt.Sprintf("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n", len(chunked(body))), chunked(body), false},
			{"te_then_cl", fmt.Sprintf("Transfer-Encoding: chunked\r\nContent-Length: %d\r\n", len(body)), chunked(body), false},
			{"te_identity_with_cl", fmt.Sprintf("Transfer-Encoding: identity\r\nContent-Length: %d\r\n", len(body)), body, false},
			{"te_chunked_twice", "Transfer-Encoding: chunked, chunked\r\n", chunked(chunked(body)), true},
			{"te_gzip_chunked", "Transfer-Encoding: gzip, chunked\r\n", chunked(body), true},
			{"cl_twice_differing", fmt.Sprintf("Content-Length: %d\r\nContent-Length: %d\r\n", len(body), len(body)+1), body, true},
			{"cl_list_differing", fmt.Sprintf("Content-Length: %d, %d\r\n", len(body), len(body)+1), body, true},
		}
	}
	for _, api := range trustAPIs() {
		for _, f := range cases(api.body) {
			t.Run(api.name+"/"+f.name, func(t *testing.T) {
				first := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: shepherd\r\n%sContent-Type: application/json\r\n%s\r\n%s",
					api.path, api.headers, f.headers, f.body)
				second := rawPost(api.path, api.headers, api.body)
				out, closed := rawExchange(t, addr, first+second, 10*time.Second)
				require.True(t, strings.HasPrefix(out, "HTTP/1.1 400 "), "response: %q", out)
				if !f.parser {
					api.shape(t, rawBody(out))
				}
				require.Equal(t, 1, responseCount(out), "the pipelined request was served: %q", out)
				require.True(t, closed, "connection left open after a framing error")
			})
		}
	}
	require.Empty(t, up.requests(), "a request with ambiguous framing, or the one behind it, reached the upstream")

	// Control: the same pipelined pair with clean framing is served twice.
	api := trustAPIs()[0]
	out, _ := rawExchange(t, addr, rawPost(api.path, api.headers, api.body)+rawPost(api.path, api.headers+"Connection: close\r\n", api.body), 10*time.Second)
	require.Equal(t, 2, strings.Count(out, "HTTP/1.1 200 "), out)
	// And chunked alone is fine.
	out, _ = rawExchange(t, addr, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n%s",
		api.path, api.headers, chunked(api.body)), 10*time.Second)
	require.True(t, strings.HasPrefix(out, "HTTP/1.1 200 "), out)
}
