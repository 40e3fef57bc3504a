package proxy

import (
	"bytes"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// headerOverhead reports shepherd's own time on a reply (docs/diagnostics.md):
// a response header on whole replies, a trailer on streams whose client
// sent "TE: trailers".
const headerOverhead = "X-Shepherd-Overhead"

// ownTime is the time the request spent inside shepherd, excluding waiting
// for the upstream, until its reply's headers were decided: the value of
// shepherd_overhead_seconds, X-Shepherd-Overhead, request.finished's
// overhead_ms and the access log's. Measured once (the first call) and kept,
// so every report of one request agrees.
func (x *exchange) ownTime() time.Duration {
	if !x.ownMeasured {
		x.own, x.ownMeasured = time.Since(x.start)-x.upWait, true
	}
	return x.own
}

// appendOverhead appends d as milliseconds with three decimals and the unit
// ("0.412ms").
func appendOverhead(b []byte, d time.Duration) []byte {
	b = strconv.AppendFloat(b, overheadMillis(d), 'f', 3, 64)
	return append(b, "ms"...)
}

// overheadMillis is d in milliseconds, rounded to the microsecond.
func overheadMillis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var teTrailers = []byte("trailers")

// acceptsTrailers reports whether the request's TE header lists the
// "trailers" token (RFC 9110 §10.1.4): the client reads trailer fields.
func acceptsTrailers(h *fasthttp.RequestHeader) bool {
	te := h.Peek(fasthttp.HeaderTE)
	for len(te) > 0 {
		var tok []byte
		if i := bytes.IndexByte(te, ','); i >= 0 {
			tok, te = te[:i], te[i+1:]
		} else {
			tok, te = te, nil
		}
		if i := bytes.IndexByte(tok, ';'); i >= 0 {
			tok = tok[:i]
		}
		if bytes.EqualFold(bytes.TrimSpace(tok), teTrailers) {
			return true
		}
	}
	return false
}

// declareOverheadTrailer declares the X-Shepherd-Overhead trailer on ctx's
// streamed reply when its client accepts trailers; false when it is not
// declared (the reply then carries none).
func declareOverheadTrailer(ctx *fasthttp.RequestCtx) bool {
	return acceptsTrailers(&ctx.Request.Header) && ctx.Response.Header.AddTrailer(headerOverhead) == nil
}

// overheadTrailer declares the X-Shepherd-Overhead trailer on a streamed
// reply whose client accepts trailers and returns what the stream body
// calls once its writer is done, on the connection's goroutine before
// fasthttp writes the trailer section after the last chunk: it sets the
// trailer's value from x (the stream writer's copy of the exchange). nil
// when the client does not accept trailers: the reply is unchanged.
func overheadTrailer(ctx *fasthttp.RequestCtx, x *exchange) func() {
	if !declareOverheadTrailer(ctx) {
		return nil
	}
	h := &ctx.Response.Header
	return func() {
		var buf [32]byte
		h.SetBytesV(headerOverhead, appendOverhead(buf[:0], x.ownTime()))
	}
}
