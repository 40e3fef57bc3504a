package proxy

import (
	"time"

	"github.com/valyala/fasthttp"
)

// Per-client limits on the proxy listener (limits.header_timeout,
// limits.body_timeout, limits.max_conns_per_ip) map onto fasthttp.Server:
//
//   - Server.ReadTimeout is the header timeout. fasthttp arms it as an
//     absolute read deadline when a connection is accepted and again at the
//     first byte of each request, so a client trickling its headers one byte
//     at a time is cut when it expires, not when it falls silent.
//   - HeaderReceived (headerReceived) re-arms the deadline for the body once the
//     headers are in.
//   - perIPListener (conns_per_ip.go) caps the connections of one address
//     and answers the one beyond with 429 before the server reads it.

// headerReceived is the server's HeaderReceived callback: it notes the
// route of a request with a body (noteBodyRoute, so a body that fails to
// read is refused in the route's error shape) and gives the request d to
// send its body, counted from the end of its headers.
//
// A body over limits.max_body_bytes by its Content-Length is refused
// (bufferBody) after fasthttp read one byte of it, not the 8 KB it reads
// ahead of a streamed body's handler: the limit it is given here caps that
// read.
func (s *Server) headerReceived(d time.Duration) func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		s.noteBodyRoute(h)
		rc := fasthttp.RequestConfig{ReadTimeout: d}
		if h.ContentLength() > s.cfg.Limits.MaxBodyBytes {
			rc.MaxRequestBodySize = 1
		}
		return rc
	}
}
