package proxy

import (
	"errors"
	"io"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// The proxy listener streams request bodies (fasthttp's StreamRequestBody),
// so that a long body the proxy forwards unchanged can go upstream while it
// still arrives (cut_through.go). Every other request is read whole here,
// before any other handler step sees it (bufferBody): for them nothing
// changes but who reads the body.
//
// A body read here lives in a pooled buffer that is the request's body
// (Request.SetBodyRaw) until fasthttp resets the request, after the
// response (streamed replies included) is written: the buffer goes back to
// the pool then, through the request's user values, which fasthttp closes
// on reset.

// bodyBufferKey is the request user value that holds the pooled body.
type bodyBufferKey struct{}

// pooledBody is a request body read into a buffer of bodyBuffers; Close
// gives it back.
type pooledBody struct {
	b   []byte
	mem []byte // what the allocator handed out (b may have grown past it)
}

// Close releases the buffer (fasthttp calls it when the request is reset).
func (p *pooledBody) Close() error {
	releaseBodyBuffer(p)
	return nil
}

// bodyAllocator hands out request body buffers (acquire: capacity at least
// n, length 0) and takes them back.
type bodyAllocator interface {
	acquire(n int) *pooledBody
	release(p *pooledBody)
}

// bodyBuffers is the allocator of request bodies: pools by size class. The
// package's tests replace it with one whose released buffers fault when
// read (body_guard_linux_test.go), so that a body read after its release
// fails loudly instead of reading another request's bytes.
var bodyBuffers bodyAllocator = &bodyPools{}

func releaseBodyBuffer(p *pooledBody) { bodyBuffers.release(p) }

// requestBodyBuffer returns a body buffer of capacity at least n that the
// request owns: it goes back to the pool when fasthttp resets the request
// (unless takeRequestBody hands it on first).
func requestBodyBuffer(ctx *fasthttp.RequestCtx, n int) *pooledBody {
	p := bodyBuffers.acquire(n)
	ctx.Request.SetUserValue(bodyBufferKey{}, p)
	return p
}

// takeRequestBody hands the request's pooled body to the caller, who
// releases it (releaseBodyBuffer) once nothing reads it: for what outlives
// the request context, a detached stream. nil when the body is not pooled.
func takeRequestBody(ctx *fasthttp.RequestCtx) *pooledBody {
	p, _ := ctx.Request.UserValue(bodyBufferKey{}).(*pooledBody)
	if p != nil {
		ctx.Request.RemoveUserValue(bodyBufferKey{})
	}
	return p
}

// bodyPools pools request body buffers by size class: 512 B << i, up to
// 32 MB; a larger body gets a buffer of its own. Small classes matter: a
// detached stream keeps its request's buffer for its whole life.
type bodyPools [17]sync.Pool

const minBodyClass = 512

// bodyClass is the class of a buffer of capacity n: the smallest that
// holds n bytes; -1 beyond the largest.
func bodyClass(n int) int {
	c, size := 0, minBodyClass
	for size < n && c < len(bodyPools{})-1 {
		c++
		size <<= 1
	}
	if size < n {
		return -1
	}
	return c
}

func (ps *bodyPools) acquire(n int) *pooledBody {
	c := bodyClass(n)
	if c < 0 {
		return &pooledBody{b: make([]byte, 0, n)}
	}
	if v, ok := ps[c].Get().(*pooledBody); ok {
		v.b = v.b[:0]
		return v
	}
	return &pooledBody{b: make([]byte, 0, minBodyClass<<c)}
}

// release pools a buffer whose capacity is exactly a class's (one that
// grew while it was read is left to the GC).
func (ps *bodyPools) release(p *pooledBody) {
	if c := bodyClass(cap(p.b)); c >= 0 && minBodyClass<<c == cap(p.b) {
		ps[c].Put(p)
	}
}

// bufferBody reads the whole body of every request that is not forwarded
// cut-through, so that the steps after it find it as fasthttp would have
// read it. A body that cannot be read is refused as fasthttp refuses one
// (handleServerError's shapes: 413 over limits.max_body_bytes, 408 on the
// body timeout, 400 otherwise) and the connection is closed. A request
// whose handler returns with its body stream unread closes its connection:
// the next request's bytes would follow the unread body.
func (s *Server) bufferBody(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if ctx.RequestBodyStream() == nil {
			next(ctx)
			return
		}
		if rt := classifyHeader(&ctx.Request.Header, ctx.Path()); !s.cutThroughCandidate(ctx, rt) {
			pf := s.prefetchBody(ctx, rt)
			defer pf.Close() // before the buffer can hold another body
			if err := s.readWholeBody(ctx, pf); err != nil {
				s.refuseBody(ctx, err)
				return
			}
		}
		next(ctx)
		if ctx.RequestBodyStream() != nil {
			ctx.SetConnectionClose()
		}
	}
}

// prefetchBody returns the prefetch for the body of a request of route rt:
// a model request's long body is compared with the index memo's bodies
// while it arrives (rewrite.BodyPrefetch); nil for any other, and for a
// body sent with a Content-Encoding (what arrives is not what is parsed).
func (s *Server) prefetchBody(ctx *fasthttp.RequestCtx, rt route) *rewrite.BodyPrefetch {
	if !rt.inspect || rt.api == nil || len(contentCodings(&ctx.Request.Header)) > 0 {
		return nil
	}
	return s.views.PrefetchBody(rt.api.Conversation, ctx.Request.Header.ContentLength())
}

// readWholeBody reads the request's streamed body into a pooled buffer
// that becomes the request's body.
func (s *Server) readWholeBody(ctx *fasthttp.RequestCtx, pf *rewrite.BodyPrefetch) error {
	limit := s.cfg.Limits.MaxBodyBytes
	size := ctx.Request.Header.ContentLength()
	if size > limit {
		return fasthttp.ErrBodyTooLarge
	}
	hint := size
	if hint < 0 {
		hint = 16 << 10 // chunked: grown as it arrives
	}
	p := requestBodyBuffer(ctx, hint)
	b, err := readBodyInto(p.b, ctx.RequestBodyStream(), limit, pf)
	p.b = b
	switch {
	case err != nil:
		return err
	case size >= 0 && len(b) != size:
		return io.ErrUnexpectedEOF
	}
	ctx.Request.SetBodyRaw(b) // closes the stream
	return nil
}

// readBodyInto appends what r holds to dst, at most limit bytes
// (fasthttp.ErrBodyTooLarge beyond), feeding pf the body after each read.
func readBodyInto(dst []byte, r io.Reader, limit int, pf *rewrite.BodyPrefetch) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, fasthttp.ErrBodyTooLarge
		}
		if n > 0 {
			pf.Feed(dst)
		}
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// refuseBody answers a request whose body could not be read, in its
// route's error shape, and closes the connection.
func (s *Server) refuseBody(ctx *fasthttp.RequestCtx, err error) {
	s.refuseUnread(ctx, classifyHeader(&ctx.Request.Header, ctx.Path()), err)
	ctx.SetConnectionClose()
}
