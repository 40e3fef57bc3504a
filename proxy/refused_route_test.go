package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestRouteOfRawRequest: the route of a request whose header failed to
// parse comes from the raw request fasthttp quotes in its error.
func TestRouteOfRawRequest(t *testing.T) {
	cases := map[string]Provider{
		"POST /v1/messages HTTP/1.1\r\nHost: a\r\nX-Bad: \x01\r\n\r\n":              ProviderAnthropic,
		"POST /v1/chat/completions?x=1 HTTP/1.1\r\nBad\x01: v\r\n":                  ProviderOpenAI,
		"POST /v1beta/models/g:generateContent?key=k HTTP/9.9\r\n":                  ProviderGemini,
		"GET http://host:1/v1/models HTTP/1.1\r\nanthropic-version: 1\r\n":          ProviderAnthropic,
		"GET /v1/models?alt=sse&key=k HTTP/1.1\r\n":                                 ProviderGemini,
		"POST /v1/models/m:streamGenerateContent HTTP/1.1\r\nx-goog-api-key: k\r\n": ProviderGemini,
	}
	for raw, want := range cases {
		err := fmt.Errorf("error when reading request headers: %w: buffer size=%d, contents: %q", errors.New("x"), len(raw), raw)
		var s Server
		var ctx fasthttp.RequestCtx
		if got := s.routeOfRefused(&ctx, err).provider; got != want {
			t.Errorf("%q: provider %s, want %s", raw, got, want)
		}
	}
}

// FuzzSplitRawRequest: any raw bytes split without a panic into a path
// without query, and rawRequestStart recovers the bytes fasthttp quotes.
func FuzzSplitRawRequest(f *testing.F) {
	f.Add([]byte("POST /v1/messages?key=1 HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Add([]byte("GET http://h HTTP/1.1"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, path, _, _ := splitRawRequest(raw)
		if bytes.ContainsAny(path, "?#") {
			t.Fatalf("path %q of %q keeps its query", path, raw)
		}
		err := fmt.Errorf("contents: %q", raw)
		if got, ok := rawRequestStart(err); !ok || string(got) != string(raw) {
			t.Fatalf("rawRequestStart lost the bytes: %q", raw)
		}
	})
}
