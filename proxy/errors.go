package proxy

import (
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// Errors the proxy classifies. statusOf is the one place they become HTTP
// statuses.
var (
	errUpstreamTimeout     = errors.New("proxy: upstream timed out")
	errUpstreamUnreachable = errors.New("proxy: upstream unreachable")
	errUpstreamBroken      = errors.New("proxy: upstream connection failed")
	errNotFound            = errors.New("proxy: no route")
	errBodyTooLarge        = errors.New("proxy: request body too large")
	errShuttingDown        = errors.New("proxy: shutting down")
	// Refusals of a request fasthttp could not read (refusedError).
	errHeaderTooLarge = errors.New("proxy: request header too large")
	errRequestTimeout = errors.New("proxy: request not received in time")
	errUnparsable     = errors.New("proxy: request could not be parsed")
	// Bodies whose Content-Encoding shepherd cannot undo (body_decode.go).
	errUnsupportedEncoding = errors.New("proxy: unsupported request Content-Encoding")
	errBadEncoding         = errors.New("proxy: request body does not decode with its Content-Encoding")
)

// classifyUpstreamError wraps an error from the upstream client into one of
// the proxy's classes.
func classifyUpstreamError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.As(err, &ne) && ne.Timeout():
		return errors.Join(errUpstreamTimeout, err)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), isDNSError(err):
		return errors.Join(errUpstreamUnreachable, err)
	}
	return errors.Join(errUpstreamBroken, err)
}

func isDNSError(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

// statusOf maps an error to the HTTP status the client receives and the
// message it reads. Messages never include upstream error text, which can
// carry addresses and internals.
func statusOf(err error) (int, string) {
	switch {
	case errors.Is(err, rewrite.ErrMalformed):
		return fasthttp.StatusBadRequest, malformedMessage(err)
	case errors.Is(err, errBodyTooLarge):
		return fasthttp.StatusRequestEntityTooLarge, "request body exceeds the proxy's limit (limits.max_body_bytes)"
	case errors.Is(err, errNotFound):
		return fasthttp.StatusNotFound, "shepherd has no route for this path"
	case errors.Is(err, errUpstreamTimeout):
		return fasthttp.StatusGatewayTimeout, "upstream did not answer in time"
	case errors.Is(err, errUpstreamUnreachable):
		return fasthttp.StatusBadGateway, "upstream unreachable"
	case errors.Is(err, errShuttingDown):
		return fasthttp.StatusServiceUnavailable, "shepherd is shutting down"
	case errors.Is(err, errUnsupportedEncoding):
		return fasthttp.StatusUnsupportedMediaType, "request Content-Encoding is not supported: shepherd decodes gzip, deflate, br and zstd"
	case errors.Is(err, errBadEncoding):
		return fasthttp.StatusBadRequest, "request body does not decode with its Content-Encoding"
	case errors.Is(err, errHeaderTooLarge):
		return fasthttp.StatusRequestHeaderFieldsTooLarge, "request header too large"
	case errors.Is(err, errRequestTimeout):
		return fasthttp.StatusRequestTimeout, "request was not received in time"
	case errors.Is(err, errUnparsable):
		return fasthttp.StatusBadRequest, "request could not be parsed"
	}
	return fasthttp.StatusBadGateway, "upstream connection failed"
}

// malformedMessage returns the codec's description of a malformed body for
// the client (it names a field, never echoes content), without the Go
// package prefix.
func malformedMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "rewrite: ")
}

// writeError renders err in the calling API's own error shape.
func writeError(ctx *fasthttp.RequestCtx, p Provider, err error) int {
	status, msg := statusOf(err)
	writeErrorStatus(ctx, p, status, msg)
	return status
}

// writeErrorStatus writes a JSON error body of the given status in the
// provider's error shape.
func writeErrorStatus(ctx *fasthttp.RequestCtx, p Provider, status int, msg string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(errorAPI(p).ErrorBody(status, msg))
}
