package proxy

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/hooks"
)

// streamBody is a streamed response body produced by a writer function
// (the SSE pass-through, the turn engine's splicer) that runs on the client
// connection's own goroutine.
//
// fasthttp's SetBodyStreamWriter runs its writer in a second goroutine and
// hands the bytes to the connection goroutine through an in-memory pipe,
// with a 4 KB bufio.Writer on one side and a 4 KB copy buffer on the other.
// For a stream that sits idle for minutes (a model thinking, an agent's
// long tool call) that is a second goroutine stack and ~10 KB of buffers per
// open stream for nothing. streamBody implements fasthttp.BodyWriterTo
// instead: fasthttp calls WriteTo on the connection goroutine, and frames and
// flushes every write of its writer as one chunk. The writer function gets a
// streamWriter over it, which sends what was written before shepherd waits
// for the upstream again.
//
// The writer must return once a write or a flush fails (the client went
// away). It runs
// exactly once: from WriteTo; from Read (a goroutine writing into a pipe,
// for a consumer that reads the body instead of letting fasthttp write it);
// or, when fasthttp drops the body without sending it (a HEAD request, a
// connection that failed first), from Close, against a writer that fails at
// once, so the writer releases the upstream and runs its cleanup exactly as
// if the client had left.
type streamBody struct {
	run func(w io.Writer)
	// sent, when not nil, runs after the writer returned from WriteTo (the
	// body went to the client through fasthttp), on the connection's
	// goroutine, before fasthttp ends the chunked body and writes the
	// trailer section: it may set trailer values on the response header.
	// It never runs when the body is read or dropped instead.
	sent    func()
	claimed atomic.Bool

	mu sync.Mutex
	pr *io.PipeReader // set when the body is consumed through Read
}

func newStreamBody(run func(w io.Writer)) *streamBody {
	return &streamBody{run: run}
}

// withTrailer sets the body's sent function (see overheadTrailer); nil
// leaves it unset.
func (b *streamBody) withTrailer(sent func()) *streamBody {
	b.sent = sent
	return b
}

var (
	errStreamBodyUsed   = errors.New("proxy: stream body already consumed")
	errStreamBodyClosed = errors.New("proxy: stream body closed before it was sent")
)

// claim reports whether the caller is the one that runs the writer.
func (b *streamBody) claim() bool { return b.claimed.CompareAndSwap(false, true) }

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read
// (fasthttp.BodyWriterTo).
func (b *streamBody) SupportsBodyWriteTo() bool { return true }

// WriteTo runs the writer on the calling goroutine, writing to w.
func (b *streamBody) WriteTo(w io.Writer) (int64, error) {
	if !b.claim() {
		return 0, errStreamBodyUsed
	}
	sw := newStreamWriter(w)
	b.run(sw)
	_ = sw.Flush()
	if b.sent != nil {
		b.sent()
	}
	return sw.n, sw.err
}

// Read serves the body through a pipe fed by the writer on its own
// goroutine. fasthttp does not use it (it calls WriteTo); it keeps the body
// a correct io.Reader for anything else.
func (b *streamBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	pr := b.pr
	if pr == nil {
		if !b.claim() {
			b.mu.Unlock()
			return 0, errStreamBodyUsed
		}
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		b.pr = pr
		go func() {
			sw := newStreamWriter(pw)
			b.run(sw)
			_ = sw.Flush()
			_ = pw.Close()
		}()
	}
	b.mu.Unlock()
	return pr.Read(p)
}

// Close is called by fasthttp once the body was sent or dropped. A writer
// still feeding a reader sees its next Write fail; a writer that never ran
// runs now (on its own goroutine: it may wait for the upstream's next
// event) against a failing writer.
func (b *streamBody) Close() error {
	b.mu.Lock()
	pr := b.pr
	b.mu.Unlock()
	if pr != nil {
		return pr.Close()
	}
	if b.claim() {
		go b.run(failingWriter{})
	}
	return nil
}

// failingWriter is the client of a body that was never sent.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errStreamBodyClosed }

// releaseRequestBody drops the client request's body from ctx once it has
// gone upstream: fasthttp keeps a request's body until its response has
// been written, which for a stream is its whole life. The buffer is not
// returned to fasthttp's pool, so whatever still refers to it (the turn
// engine keeps the agent's body for the ledger) stays valid, including when
// the stream's writer outlives the connection's next request.
func releaseRequestBody(ctx *fasthttp.RequestCtx) {
	ctx.Request.ReleaseBody(0)
}

// passThroughExchange is what a pass-through stream's writer keeps of x: the
// route, codec, request id and framing it reports with, not the hook call
// (session snapshot, parsed request) that served the request side.
func passThroughExchange(x *exchange) exchange {
	xs := *x
	xs.call = hooks.Call{}
	return xs
}
