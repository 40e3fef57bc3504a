package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// upgradeMessage tells the client (and a person reading its log) what to do.
// shepherd serves model traffic over plain HTTP only: a WebSocket tunnel
// would carry turns past every feature, so it is never opened.
const upgradeMessage = "shepherd does not accept WebSocket upgrades; send the request over HTTP"

// refuseUpgrade answers a request carrying "Upgrade: websocket" with 426
// Upgrade Required in the calling API's error shape, without contacting the
// upstream, and reports whether it did. Codex CLI opens its Responses
// transport with GET /v1/responses and such an upgrade; its own tests stand
// in for a server without WebSockets with a bare 426, on which it falls back
// to POST /v1/responses at once and quietly. The response closes the
// connection, so nothing the client sends after the handshake is read as
// HTTP.
func refuseUpgrade(ctx *fasthttp.RequestCtx, p Provider) bool {
	if !isWebSocketUpgrade(&ctx.Request.Header) {
		return false
	}
	writeErrorStatus(ctx, p, fasthttp.StatusUpgradeRequired, upgradeMessage)
	ctx.SetConnectionClose()
	return true
}

// isWebSocketUpgrade reports whether the request asks to switch to the
// WebSocket protocol (Upgrade: websocket, any case, possibly in a list).
func isWebSocketUpgrade(h *fasthttp.RequestHeader) bool {
	up := h.Peek(fasthttp.HeaderUpgrade)
	if len(up) == 0 {
		return false
	}
	for tok := range bytes.SplitSeq(up, []byte(",")) {
		if bytes.EqualFold(bytes.TrimSpace(tok), []byte("websocket")) {
			return true
		}
	}
	return false
}
