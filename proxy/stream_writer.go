package proxy

import (
	"errors"
	"io"
	"strconv"
	"sync"
)

// streamWriter is what a stream's writer writes to. Each Flush sends the
// bytes written since the previous one as one chunk.
//
// The forwarding loops write events without flushing, and the upstream
// connection flushes before each of its socket reads (idleConn.Read), which
// happen only once fasthttp's read buffer is empty: events that arrived
// together (a burst, several events in one TCP segment) leave in one write,
// and nothing written ever waits while shepherd waits for the upstream.
// Writes that are not followed by an upstream read (a turn's released tool
// calls, its terminal events, a stream error event) go through write, which
// flushes at once.
//
// Pending bytes sit in a pooled buffer taken by the first write after a
// flush and given back by the flush, so an idle stream holds none.
//
// Chunks go out in one of two ways. Through w, fasthttp's chunk writer,
// which frames each write as a chunk in the connection's write buffer and
// flushes it; the first chunk always goes this way, so it leaves with the
// response headers waiting in that buffer. After it, when conn (the client
// connection w's buffer writes to) is set, the writer frames each chunk
// itself, in the headroom of its pooled buffer, and writes it to conn in one
// write: fasthttp's buffer is empty between chunks, so the bytes keep their
// order, and that buffer can stay small (server.go: an open stream holds it
// for its whole life) without a chunk taking several writes.
type streamWriter struct {
	w    io.Writer
	conn io.Writer // the client connection w's buffer writes to; nil: every chunk goes through w
	sent bool      // a chunk went through w: its buffer is empty from now on
	buf  *[]byte   // chunkHeadroom bytes, then the pending ones; nil when none are pending
	n    int64     // body bytes that reached the client
	err  error     // first write error: the client went away
}

// coalesceSize bounds a chunk built from several writes; a larger write goes
// out as a chunk of its own.
const coalesceSize = 4 << 10

// chunkHeadroom is the room before the pending bytes for a chunk's size
// line: up to 8 hex digits and CRLF.
const chunkHeadroom = 10

var coalescePool = sync.Pool{New: func() any {
	b := make([]byte, chunkHeadroom, chunkHeadroom+coalesceSize+len(crlf))
	return &b
}}

func newStreamWriter(w io.Writer) *streamWriter { return &streamWriter{w: w} }

// Write adds p to the pending bytes (it fails only once the client went
// away, which a flush finds out).
func (s *streamWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.buf != nil && s.pending()+len(p) > coalesceSize {
		if err := s.Flush(); err != nil {
			return 0, err
		}
	}
	if len(p) >= coalesceSize {
		return s.send(p)
	}
	if s.buf == nil {
		s.buf = coalescePool.Get().(*[]byte)
	}
	*s.buf = append(*s.buf, p...)
	return len(p), nil
}

func (s *streamWriter) pending() int { return len(*s.buf) - chunkHeadroom }

// Flush sends the pending bytes and gives their buffer back.
func (s *streamWriter) Flush() error {
	if s.buf == nil {
		return s.err
	}
	b := s.buf
	s.buf = nil
	if len(*b) > chunkHeadroom && s.err == nil {
		if s.conn != nil && s.sent {
			s.sendFramed(b)
		} else {
			_, _ = s.send((*b)[chunkHeadroom:])
		}
	}
	*b = (*b)[:chunkHeadroom]
	coalescePool.Put(b)
	return s.err
}

// send sends p as one chunk through w.
func (s *streamWriter) send(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	if err != nil && s.err == nil {
		s.err = err
	}
	if err == nil {
		s.sent = true
	}
	return n, err
}

// sendFramed writes the pending bytes of b to conn as one chunk, framed
// as fasthttp frames a chunk: the size in hex, CRLF, the bytes, CRLF.
func (s *streamWriter) sendFramed(b *[]byte) {
	data := len(*b) - chunkHeadroom
	var head [chunkHeadroom]byte
	h := append(strconv.AppendInt(head[:0], int64(data), 16), crlf...)
	start := chunkHeadroom - len(h)
	copy((*b)[start:], h)
	*b = append(*b, crlf...)
	if _, err := s.conn.Write((*b)[start:]); err != nil {
		if s.err == nil {
			s.err = err
		}
		return
	}
	s.n += int64(data)
}

// flusher is a writer with pending bytes to send (streamWriter; the tests'
// bufio.Writer).
type flusher interface{ Flush() error }

// flush sends w's pending bytes; false means the client went away.
func flush(w io.Writer) bool {
	if f, ok := w.(flusher); ok {
		return f.Flush() == nil
	}
	return true
}

// clientWriteError is an upstream read that did not happen because the
// flush before it failed: the client went away.
type clientWriteError struct{ err error }

func (e clientWriteError) Error() string { return "proxy: writing to the client: " + e.err.Error() }
func (e clientWriteError) Unwrap() error { return e.err }

// clientLeft reports whether err is a client write failure surfacing
// through the upstream reader.
func clientLeft(err error) bool {
	var cw clientWriteError
	return errors.As(err, &cw)
}

// writeFailed reports whether w is a streamWriter whose client went away
// (an upstream read error may hide a failed flush: fasthttp does not always
// wrap its reader's errors).
func writeFailed(w io.Writer) bool {
	sw, ok := w.(*streamWriter)
	return ok && sw.err != nil
}
