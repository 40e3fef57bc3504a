package proxy

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// A streamed turn's follow-ups are built from the agent's request head
// parsed back from its wire form; they must go upstream exactly as they
// would from the parsed request itself.
func TestRequestHeadRoundTrip(t *testing.T) {
	u, err := newUpstream(ProviderAnthropic, "https://api.example.com/prefix/", upstreamOptions{MaxConns: 1})
	require.NoError(t, err)

	var in fasthttp.Request
	in.Header.SetMethod("POST")
	in.SetRequestURI("/v1/messages?beta=true&x=%2Fslash&x=2")
	in.Header.SetHost("shepherd.local:8787")
	in.Header.Set("X-Api-Key", "sk-ant-test")
	in.Header.Set("Anthropic-Version", "2023-06-01")
	in.Header.Add("Anthropic-Beta", "one")
	in.Header.Add("Anthropic-Beta", "two")
	in.Header.Set("Connection", "keep-alive")
	in.Header.Set("Accept-Encoding", "gzip")
	in.Header.SetCookie("session", "abc")
	in.Header.SetContentType("application/json")
	in.SetBodyString(`{"model":"m","messages":[]}`)

	head := newRequestHead(&in.Header)
	back, err := head.request()
	require.NoError(t, err)

	body := []byte(`{"follow":"up"}`)
	var want, got fasthttp.Request
	prepareUpstreamRequest(&want, &in, u, body, true)
	prepareUpstreamRequest(&got, back, u, body, true)
	require.Equal(t, want.String(), got.String())
	require.Contains(t, got.String(), "POST /prefix/v1/messages?beta=true&x=%2Fslash&x=2 HTTP/1.1\r\n")
	require.Contains(t, got.String(), "Anthropic-Beta: two\r\n")

	// The head is a copy: the request it came from may be reused.
	in.Header.Set("X-Api-Key", "changed")
	again, err := head.request()
	require.NoError(t, err)
	require.Equal(t, "sk-ant-test", string(again.Header.Peek("X-Api-Key")))
}

func TestRequestHeadLargeHeaders(t *testing.T) {
	var in fasthttp.Request
	in.Header.SetMethod("POST")
	in.SetRequestURI("/v1/chat/completions")
	in.Header.SetHost("h")
	big := make([]byte, 12<<10)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	in.Header.SetBytesV("X-Big", big)
	back, err := newRequestHead(&in.Header).request()
	require.NoError(t, err, "a head larger than bufio's default size parses")
	require.Equal(t, string(big), string(back.Header.Peek("X-Big")))
}

func TestRequestHeadBroken(t *testing.T) {
	_, err := requestHead("GARBAGE").request()
	require.Error(t, err)
}
