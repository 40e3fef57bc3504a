package proxy

import (
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// screenRequest wraps h with the checks every request on the proxy listener
// passes before anything else reads it: unambiguous HTTP/1.1 framing
// (framing.go; a failure also closes the connection, so no request
// pipelined behind it is served) and a path that cannot leave the upstream's
// path prefix (reqpath.go). Refusals are 400 in the calling API's error
// shape.
func (s *Server) screenRequest(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if msg, err := checkFraming(ctx.Request.Header.RawHeaders()); err != nil {
			s.refuseRequest(ctx, "framing", msg)
			// After the response: writing the error resets it.
			ctx.SetConnectionClose()
			return
		}
		if err := checkRequestPath(ctx.URI().PathOriginal()); err != nil {
			s.refuseRequest(ctx, "path", pathEscapeMessage)
			return
		}
		h(ctx)
	}
}

// refuseRequest answers 400 with msg in the error shape of the API the
// request looks like, counts it and logs why (never the path or headers,
// which can carry credentials).
func (s *Server) refuseRequest(ctx *fasthttp.RequestCtx, reason, msg string) {
	rt := classifyHeader(&ctx.Request.Header, ctx.Path())
	writeErrorStatus(ctx, rt.provider, fasthttp.StatusBadRequest, msg)
	rid := s.requestID(ctx)
	ctx.Response.Header.Set(headerRequestID, rid)
	s.metrics.countRequest(rt.name, fasthttp.StatusBadRequest)
	s.log.Info("request refused", zap.String("request_id", rid), zap.String("route", rt.name),
		zap.String("reason", reason), zap.String("detail", msg))
}
