package proxy

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// routeOfRefused picks the route, and so the error shape, of a request
// fasthttp refused before the handler ran. When the header was read and the
// body failed (bad chunking, an over-limit chunked body, a timeout), fasthttp
// has reset the request; the route noteBodyRoute recorded is used. When the
// header was read and refused before the body (an over-limit
// Content-Length), it is classified as usual. When the header itself failed to parse, fasthttp has reset it; the
// request line and header names are then read from the start of the raw
// request that fasthttp's error quotes ("… contents: \"POST /v1/messages
// …\""), so the refusal still comes in the shape of the API the path
// serves. Only the method, path and the presence of the anthropic-version
// and x-goog-api-key headers (or a key= query parameter) are used; the
// error text itself is never logged or answered.
func (s *Server) routeOfRefused(ctx *fasthttp.RequestCtx, err error) route {
	if v, ok := s.bodyRoutes.LoadAndDelete(&ctx.Request.Header); ok {
		return v.(route)
	}
	if raw, ok := rawRequestStart(err); ok {
		method, path, query, head := splitRawRequest(raw)
		lower := bytes.ToLower(head)
		return classify(method, path, bytes.Contains(lower, []byte("\nanthropic-version:")),
			bytes.Contains(lower, []byte("\nx-goog-api-key:")) || hasKeyParam(query))
	}
	h := &ctx.Request.Header
	return classify(ctx.Method(), ctx.Path(), len(h.Peek("Anthropic-Version")) > 0,
		len(h.Peek("X-Goog-Api-Key")) > 0 || len(ctx.QueryArgs().Peek("key")) > 0)
}

// rawRequestStart returns the raw request bytes fasthttp quotes in a header
// parse error ("contents: %q" or "contents: %q...%q"; the first quote holds
// the start of the request).
func rawRequestStart(err error) ([]byte, bool) {
	if err == nil {
		return nil, false
	}
	msg := err.Error()
	i := strings.LastIndex(msg, "contents: ")
	if i < 0 {
		return nil, false
	}
	q, qerr := strconv.QuotedPrefix(msg[i+len("contents: "):])
	if qerr != nil {
		return nil, false
	}
	s, qerr := strconv.Unquote(q)
	if qerr != nil {
		return nil, false
	}
	return []byte(s), true
}

// splitRawRequest splits the start of a raw HTTP request into the request
// line's method, path (origin-form; an absolute-form target loses its
// scheme and host) and query, and the header lines that follow, prefixed
// with "\n" so that every header name follows a newline.
func splitRawRequest(raw []byte) (method, path, query, head []byte) {
	line := raw
	if i := bytes.IndexByte(raw, '\n'); i >= 0 {
		line, head = raw[:i], raw[i:]
	}
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return nil, []byte("/"), nil, head
	}
	method = fields[0]
	if len(fields) < 2 {
		return method, []byte("/"), nil, head
	}
	target := fields[1]
	path = uriPath(target)
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		query = target[i+1:]
	}
	return method, path, query, head
}

// hasKeyParam reports whether a raw query string carries a key= parameter
// (Gemini's API key in the URL).
func hasKeyParam(query []byte) bool {
	for _, kv := range bytes.Split(query, []byte("&")) {
		if bytes.HasPrefix(kv, []byte("key=")) {
			return true
		}
	}
	return false
}

// refusedError maps an error fasthttp met before the handler ran to the
// proxy's class for it (statusOf gives status and message): an over-limit
// body (announced or chunked), a header larger than the read buffer, a read
// timeout, or anything unparsable. It never carries the request's bytes.
func refusedError(err error) error {
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return errBodyTooLarge
	case errors.As(err, &small):
		return errHeaderTooLarge
	case isTimeout(err):
		return errRequestTimeout
	}
	return errUnparsable
}

// noteBodyRoute, called when a request's headers are in: for a request with a
// body it records the route, because fasthttp resets the whole request when
// reading the body fails and the refusal must still take the route's error
// shape. The entry is removed by routeOfRefused or when the handler runs
// (forgetBodyRoute), so the map holds at most one entry per request being
// read.
func (s *Server) noteBodyRoute(h *fasthttp.RequestHeader) {
	if h.ContentLength() != 0 {
		s.bodyRoutes.Store(h, classifyHeader(h, uriPath(h.RequestURI())))
	}
}

// forgetBodyRoute wraps the handler: a request that reaches it was read
// whole, so its noted route is dropped.
func (s *Server) forgetBodyRoute(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if ctx.Request.Header.ContentLength() != 0 {
			s.bodyRoutes.Delete(&ctx.Request.Header)
		}
		next(ctx)
	}
}

// uriPath returns the path of a request target: without query or fragment,
// and without scheme and host in absolute form.
func uriPath(target []byte) []byte {
	if i := bytes.Index(target, []byte("://")); i >= 0 {
		target = target[i+3:]
		if j := bytes.IndexByte(target, '/'); j >= 0 {
			target = target[j:]
		} else {
			target = []byte("/")
		}
	}
	if i := bytes.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	return target
}
