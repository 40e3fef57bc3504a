package proxy

import (
	"bytes"
	"iter"
	"slices"

	"github.com/valyala/fasthttp"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 §7.6.1 (plus the
// de-facto Proxy-Connection and Keep-Alive); they describe one connection and
// are never forwarded.
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// isHopHeader reports whether name is one of hopHeaders, in any case.
func isHopHeader(name []byte) bool {
	switch len(name) {
	case 2, 7, 10, 16, 17, 18, 19: // the lengths of hopHeaders' names
		for _, h := range hopHeaders {
			if len(h) == len(name) && bytes.EqualFold(name, []byte(h)) {
				return true
			}
		}
	}
	return false
}

// connectionTokens yields the header names a Connection header's value
// lists (RFC 9110 §7.6.1), slices of v.
func connectionTokens(v []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for tok := range bytes.SplitSeq(v, []byte(",")) {
			if name := bytes.TrimSpace(tok); len(name) > 0 && !yield(name) {
				return
			}
		}
	}
}

// removeHopHeaders deletes hop-by-hop headers, including any header named in
// the Connection header's token list, deleting each by name.
func removeHopHeaders(h interface {
	Peek(string) []byte
	Del(string)
}) {
	for name := range connectionTokens(h.Peek("Connection")) {
		h.Del(string(name))
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// prepareUpstreamRequest fills out from in for the upstream u: the same
// method, path (behind the upstream's path prefix), query and headers minus
// hop-by-hop headers; Host is the upstream's. body becomes the request body.
func prepareUpstreamRequest(out *fasthttp.Request, in *fasthttp.Request, u *upstream, body []byte, stripEncoding bool) {
	in.Header.CopyTo(&out.Header)
	removeHopHeaders(&out.Header)
	if stripEncoding {
		// shepherd reads model replies to frame SSE events and run reply
		// hooks, so it asks the upstream for identity encoding.
		out.Header.Del("Accept-Encoding")
	}
	uri := out.URI()
	uri.SetScheme(u.scheme)
	uri.SetHost(u.host)
	inURI := in.URI()
	if u.prefix == "" {
		uri.SetPathBytes(inURI.PathOriginal())
	} else {
		p := make([]byte, 0, len(u.prefix)+len(inURI.PathOriginal()))
		p = append(p, u.prefix...)
		p = append(p, inURI.PathOriginal()...)
		uri.SetPathBytes(p)
	}
	uri.DisablePathNormalizing = true
	uri.SetQueryStringBytes(inURI.QueryString())
	out.Header.SetHost(u.host)
	out.SetBodyRaw(body)
}

// copyResponseHeaders copies the upstream response's status and headers to
// the client response, minus hop-by-hop headers, those the Connection
// header names, and Content-Length (fasthttp sets it from the body it
// writes), in their order. It skips what it does not forward rather than
// copy then delete it: deleting a header by name normalized the name
// every time (with the request's, 1.3 µs of a small request: pprof under
// wrk), and fasthttp's deletion moves the last header into the deleted
// one's place, which reorders repeated headers of one name.
func copyResponseHeaders(dst *fasthttp.Response, src *fasthttp.Response) {
	dst.SetStatusCode(src.StatusCode())
	var named [][]byte // the Connection headers' tokens
	for k, v := range src.Header.All() {
		if bytes.EqualFold(k, []byte("Connection")) {
			named = slices.AppendSeq(named, connectionTokens(v))
		}
	}
	for k, v := range src.Header.All() {
		if isHopHeader(k) || bytes.EqualFold(k, []byte(fasthttp.HeaderContentLength)) || isNamed(named, k) {
			continue
		}
		dst.Header.AddBytesKV(k, v)
	}
}

// isNamed reports whether name is one of names, in any case.
func isNamed(names [][]byte, name []byte) bool {
	for _, n := range names {
		if bytes.EqualFold(n, name) {
			return true
		}
	}
	return false
}
