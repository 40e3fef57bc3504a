package proxy_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/test/kit"
	"github.com/stretchr/testify/require"
)

// trustAPI is one wire API as the trust tests send it raw: a valid route,
// its credential header lines, a minimal body and its error shape.
type trustAPI struct {
	d       kit.Driver
	name    string
	path    string
	headers string
	body    string
}

func trustAPIs() []trustAPI {
	var out []trustAPI
	for _, d := range kit.Drivers() {
		hdr := d.Headers()
		var lines strings.Builder
		for _, k := range slices.Sorted(maps.Keys(hdr)) {
			lines.WriteString(k + ": " + hdr[k] + "\r\n")
		}
		out = append(out, trustAPI{d: d, name: d.Name(), path: d.Path("g", false), headers: lines.String(),
			body: d.Request(kit.Request{Model: "m", History: []string{d.User("hi")}})})
	}
	return out
}

// shape asserts body is a 400 error for a malformed request in the API's
// error shape.
func (a trustAPI) shape(t *testing.T, body string) {
	t.Helper()
	require.NoError(t, a.d.ErrorShape(400, []byte(body)))
	require.Equal(t, a.d.InvalidRequestType(), a.d.ErrorType([]byte(body)), body)
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
