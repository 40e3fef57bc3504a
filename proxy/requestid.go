package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// atomicCounter is a process-wide sequence.
type atomicCounter struct{ n atomic.Uint64 }

func (c *atomicCounter) next() uint64 { return c.n.Add(1) }

// newRequestIDPrefix returns a random per-process prefix, so request ids from
// several replicas do not collide.
func newRequestIDPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestID returns the id of this request: the client's X-Request-Id when it
// sent a short printable one, else the process prefix plus a sequence number.
func (s *Server) requestID(ctx *fasthttp.RequestCtx) string {
	if v := ctx.Request.Header.Peek("X-Request-Id"); len(v) > 0 && len(v) <= 128 && printable(v) {
		return string(v)
	}
	return s.ridPrefix + "-" + strconv.FormatUint(s.ridSeq.next(), 36)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
