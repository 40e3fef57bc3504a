package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// rateLimitHeaders are n headers of about 60 bytes each, like the
// providers' rate-limit headers.
func rateLimitHeaders(n int) map[string]string {
	h := map[string]string{}
	for i := range n {
		h[fmt.Sprintf("X-Ratelimit-Bucket-%02d-Reset", i)] = "2026-11-26T07:00:00Z-" + strings.Repeat("r", 14)
	}
	return h
}

// The upstream read buffer (8 KB, held by every open stream) bounds the
// response headers: a stream whose headers are three times what the
// providers send is forwarded with all of them, and one whose headers do
// not fit fails as a bad gateway instead of being cut.
func TestUpstreamResponseHeadersBound(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	tc := modelCases()[1] // anthropic_stream
	require.True(t, tc.stream)

	fits := rateLimitHeaders(90) // ~6.3 KB
	h.mock.Script(mock.Reply{Text: "hello", Headers: fits})
	resp, body := do(t, "POST", h.URL+tc.path, tc.body, tc.headers)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(body), "message_stop")
	for k, v := range fits {
		require.Equal(t, v, resp.Header.Get(k), k)
	}

	h.mock.Script(mock.Reply{Text: "hello", Headers: rateLimitHeaders(160)}) // ~11 KB
	resp, _ = do(t, "POST", h.URL+tc.path, tc.body, tc.headers)
	require.Equal(t, 502, resp.StatusCode)
}
