package proxy

import (
	"net"
)

// The request head and its body go upstream in one system call.
//
// fasthttp writes a request through a bufio.Writer (16 KB here): the head,
// then the body, whose first part fills the buffer and is written with the
// head while the rest is written from the body in a second write. Two
// writes are two segments for the upstream to wake up for; on a 2-core
// machine pprof put each wake-up at 10–15 µs of the proxy's CPU (the
// kernel delivers loopback data in the sender's context, and waking a
// sleeping reader on another CPU is an inter-processor interrupt), and the
// split copies the buffer's share of the body once more. A gatherWriter,
// under the bufio.Writer in place of the connection, lets the body be
// queued instead (watchedBody.WriteTo) and writes it after the buffered
// head in one writev (net.Buffers on a TCP connection).

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
	// flush when none come.
	body []byte
	vec  [2][]byte
	bufs net.Buffers // vec as net.Buffers: a field, so that WriteTo's receiver needs no allocation
}

// Write writes p, followed by the queued body if any, in one writev. It
// reports the bytes of p written, as io.Writer requires; an error in the
// body's part is returned with len(p).
func (g *gatherWriter) Write(p []byte) (int, error) {
	if len(g.body) == 0 {
		return g.conn.Write(p)
	}
	g.vec = [2][]byte{p, g.body}
	g.body = nil
	g.bufs = g.vec[:]
	var n int64
	var err error
	if bw, ok := g.conn.(buffersWriter); ok {
		n, err = bw.writeBuffers(&g.bufs)
	} else {
		n, err = g.bufs.WriteTo(g.conn)
	}
	g.vec, g.bufs = [2][]byte{}, nil // the request's bytes are not kept
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
	b := g.body
	g.body = nil
	_, err := g.conn.Write(b)
	return err
}
