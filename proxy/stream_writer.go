package proxy

import (
	"errors"
	"io"
	"sync"
)

// streamWriter is what a stream's writer writes to. Each Flush sends the
// bytes written since the previous one as one chunk (fasthttp frames every
// write of its chunk writer as a chunk and flushes the connection).
//
// The forwarding loops write events without flushing, and the upstream
// connection flushes before each of its socket reads (idleConn.Read), which
// happen only once fasthttp's read buffer is empty: events that arrived
// together (a burst, several events in one TCP segment) leave in one write,
// and nothing written ever waits while shepherd waits for the upstream. Writes that are not followed by an upstream read (a turn's
// released tool calls, its terminal events, a stream error event) go
// through write, which flushes at once.
//
// Pending bytes sit in a pooled buffer taken by the first write after a
// flush and given back by the flush, so an idle stream holds none.
type streamWriter struct {
	w   io.Writer
	buf *[]byte // pending bytes; nil when there are none
	n   int64   // bytes that reached w
	err error   // first error of w: the client went away
}

// coalesceSize bounds a chunk built from several writes; a larger write goes
// out as a chunk of its own.
const coalesceSize = 4 << 10

var coalescePool = sync.Pool{New: func() any { b := make([]byte, 0, coalesceSize); return &b }}

func newStreamWriter(w io.Writer) *streamWriter { return &streamWriter{w: w} }

// Write adds p to the pending bytes (it fails only once the client went
// away, which a flush finds out).
func (s *streamWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.buf != nil && len(*s.buf)+len(p) > cap(*s.buf) {
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

// Flush sends the pending bytes and gives their buffer back.
func (s *streamWriter) Flush() error {
	if s.buf == nil {
		return s.err
	}
	b := s.buf
	s.buf = nil
	if len(*b) > 0 && s.err == nil {
		_, _ = s.send(*b)
	}
	*b = (*b)[:0]
	coalescePool.Put(b)
	return s.err
}

func (s *streamWriter) send(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
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
