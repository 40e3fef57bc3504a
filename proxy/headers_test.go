package proxy

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// hopHeaderSets are header blocks with hop headers in any case, named by
// Connection or not, with special headers (Content-Type, Trailer, Cookie)
// and repeated names.
var hopHeaderSets = []string{
	"",
	"Connection: keep-alive\r\n",
	"Connection: close\r\n",
	"connection: Upgrade, X-Secret\r\nupgrade: websocket\r\nX-Secret: s\r\nX-Kept: k\r\n",
	"TE: trailers\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic x\r\n",
	"Trailer: X-Checksum\r\nContent-Type: application/json\r\nX-A: 1\r\nX-A: 2\r\n",
	"Connection: x-a,  , X-B ,te\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\nCookie: a=b\r\n",
	"PROXY-AUTHENTICATE: Basic\r\nTransfer-Encoding: identity\r\nX-Z: z\r\n",
	"Connection: close, X-Secret\r\nX-Secret: s\r\n",
	"ConneCtion:X-B \nX-B:\n0 0:\r\n",
	"Connection: keep-alive\r\nVary: a\r\nX-Last: 1\r\nVary: b\r\n",
}

// TestHopHeadersAreNotForwarded: a request's headers keep every header but
// the hop-by-hop ones and those a Connection header names; a response's
// the same, minus Content-Length, in their order.
func TestHopHeadersAreNotForwarded(t *testing.T) {
	for i, set := range hopHeaderSets {
		checkHopRemoval(t, fmt.Sprint(i), set)
	}
}

// FuzzHopHeaders: for any header block fasthttp parses, the same.
func FuzzHopHeaders(f *testing.F) {
	for _, set := range hopHeaderSets {
		f.Add(set)
	}
	f.Fuzz(func(t *testing.T, set string) {
		checkHopRemoval(t, "", set)
	})
}

type headerPair struct{ k, v string }

// forwardable is what of before a proxy forwards (RFC 9110 §7.6.1): every
// header but the hop-by-hop ones, those any Connection header names and
// those of drop.
func forwardable(before []headerPair, drop ...string) []headerPair {
	named := map[string]bool{}
	for _, d := range drop {
		named[strings.ToLower(d)] = true
	}
	for _, p := range before {
		if strings.EqualFold(p.k, "Connection") {
			for _, tok := range strings.Split(p.v, ",") {
				named[strings.ToLower(strings.TrimSpace(tok))] = true
			}
		}
	}
	var out []headerPair
	for _, p := range before {
		if !isHopHeader([]byte(p.k)) && !named[strings.ToLower(p.k)] {
			out = append(out, p)
		}
	}
	return out
}

func pairs(all func(func([]byte, []byte) bool)) []headerPair {
	var out []headerPair
	for k, v := range all {
		out = append(out, headerPair{string(k), string(v)})
	}
	return out
}

// sorted is ps sorted: fasthttp's Del moves the last header into the
// deleted one's place, so a request's repeated names may change order (a
// limitation the README states).
func sorted(ps []headerPair) []headerPair {
	slices.SortFunc(ps, func(a, b headerPair) int { return cmp.Or(strings.Compare(a.k, b.k), strings.Compare(a.v, b.v)) })
	return ps
}

func checkHopRemoval(t *testing.T, name, set string) {
	t.Helper()
	var req fasthttp.RequestHeader
	if req.Read(bufioReader("POST /v1/messages HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"+set+"\r\n")) == nil {
		want := forwardable(pairs(req.All()))
		removeHopHeaders(&req)
		require.Equal(t, sorted(want), sorted(pairs(req.All())), "request %s", name)
	}
	var src, dst fasthttp.Response
	if src.Header.Read(bufioReader("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"+set+"\r\n")) == nil {
		want := forwardable(pairs(src.Header.All()), "Content-Length")
		copyResponseHeaders(&dst, &src)
		got := slices.DeleteFunc(pairs(dst.Header.All()), func(p headerPair) bool { return p.k == "Content-Length" }) // fasthttp's own
		require.Equal(t, want, got, "response %s", name)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
