package proxy

import (
	"net"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// The request head and its body go upstream in one system call.
//
// fasthttp writes a request through a bufio.Writer (16 KB here): the head,
// then the body, whose first part fills the buffer and is written with the
// head while the rest is written from the body in a second write. Two
// writes are two segments for the upstream to wake up for (the kernel
// delivers loopback data in the sender's context, and waking a reader that
// sleeps on another CPU is an inter-processor interrupt), and the split
// copies the buffer's share of the body once more. A gatherWriter, under
// the bufio.Writer in place of the connection, lets the body be queued
// instead (watchedBody.WriteTo) and writes it after the buffered head in
// one writev (net.Buffers on a TCP connection).
//
// A long body the turn engine built is written in segments: the spans it
// copied from the agent's body (bodyCopies) from that body, the rest from
// the built one. Both hold the same bytes, but the agent's body was read
// and parsed moments ago, while the built body is mostly the bytes the
// session's previous request left in the history memo's buffer
// (rewrite.BuildTarget), last touched a request ago and out of the CPU's
// caches: perf put the kernel's copy of a 1 MB body from it at about
// 30 µs more than from the agent's.

// Bounds of a gathered write.
const (
	// gatherCopiesMin: a shorter body goes out whole from the built body.
	gatherCopiesMin = 128 << 10
	// gatherCopyMin: a shorter copied span goes out from the built body,
	// one segment less.
	gatherCopyMin = 32 << 10
	// maxGatherSegments bounds the segments of one write, the head
	// included; a body that needs more goes out whole.
	maxGatherSegments = 16
)

// bodyCopies says which spans of a body are verbatim copies of src
// (rewrite.CopyRun, out[Out:Out+Len] == src[Src:Src+Len]); zero: none
// known.
type bodyCopies struct {
	src  []byte
	runs []rewrite.CopyRun
}

// buffersWriter is a connection that writes several buffers with one
// system call (idleConn: writev).
type buffersWriter interface {
	writeBuffers(b *net.Buffers) (int64, error)
}

// writeBuffers implements buffersWriter: net.Buffers on the socket, which
// a TCP connection writes with writev.
func (c *idleConn) writeBuffers(b *net.Buffers) (int64, error) { return b.WriteTo(c.Conn) }

// gatherWriter is the writer under upstreamTransport's bufio.Writer for a
// request whose body is a watchedBody. Not safe for concurrent use.
type gatherWriter struct {
	conn net.Conn // the upstream connection
	// body is the request body, queued by watchedBody.WriteTo and written
	// after the next bytes the bufio.Writer flushes (the head), or by
	// flush when none come; copies says where its spans may be read from
	// instead.
	body   []byte
	copies bodyCopies
	vec    [maxGatherSegments][]byte
	bufs   net.Buffers // vec's segments: a field, so that WriteTo's receiver needs no allocation
}

// Write writes p, followed by the queued body if any, in one writev. It
// reports the bytes of p written, as io.Writer requires; an error in the
// body's part is returned with len(p).
func (g *gatherWriter) Write(p []byte) (int, error) {
	if len(g.body) == 0 {
		return g.conn.Write(p)
	}
	n, err := g.writeBody(p)
	if n < int64(len(p)) {
		return int(n), err
	}
	return len(p), err
}

// flush writes the queued body when the bufio.Writer had nothing left to
// flush with it.
func (g *gatherWriter) flush() error {
	if len(g.body) == 0 {
		return nil
	}
	_, err := g.writeBody(nil)
	return err
}

// writeBody writes head (may be empty) and the queued body in one call,
// and forgets the body.
func (g *gatherWriter) writeBody(head []byte) (int64, error) {
	g.bufs = g.vec[:0]
	if len(head) > 0 {
		g.bufs = append(g.bufs, head)
	}
	g.bufs = g.appendBody(g.bufs)
	g.body, g.copies = nil, bodyCopies{}
	var n int64
	var err error
	if bw, ok := g.conn.(buffersWriter); ok {
		n, err = bw.writeBuffers(&g.bufs)
	} else {
		n, err = g.bufs.WriteTo(g.conn)
	}
	g.vec, g.bufs = [maxGatherSegments][]byte{}, nil // the request's bytes are not kept
	return n, err
}

// appendBody appends the queued body to dst (within vec) as segments: the
// body whole, or, when it is long and its copies are known, its copied
// spans of at least gatherCopyMin from copies.src and the rest from the
// body, in the body's order.
func (g *gatherWriter) appendBody(dst net.Buffers) net.Buffers {
	body, c := g.body, g.copies
	if len(body) < gatherCopiesMin || c.runs == nil || !rewrite.ValidCopyRuns(c.runs, len(body), len(c.src)) {
		return append(dst, body)
	}
	whole := len(dst)
	at := 0
	for _, r := range c.runs {
		if r.Len < gatherCopyMin {
			continue
		}
		if len(dst)+3 > maxGatherSegments { // the gap, the run and the tail
			return append(dst[:whole], body)
		}
		if r.Out > at {
			dst = append(dst, body[at:r.Out])
		}
		dst = append(dst, c.src[r.Src:r.Src+r.Len])
		at = r.Out + r.Len
	}
	if at < len(body) {
		dst = append(dst, body[at:])
	}
	return dst
}
