package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxEventSize is the largest SSE event (or JSON array element) a
// Reader buffers before giving up with ErrEventTooLarge.
const DefaultMaxEventSize = 16 << 20

// ErrEventTooLarge is returned (wrapped) when one event exceeds the reader's
// size limit without ending.
var ErrEventTooLarge = errors.New("rewrite: stream event too large")

// Event is one Server-Sent Event as read from the wire.
//
// All slices point into the Reader's buffers and are valid only until the
// next call to Next; copy what must outlive it.
type Event struct {
	// Name is the value of the last "event:" line (nil when there was none).
	Name []byte
	// Data is the values of the "data:" lines joined with "\n". It is empty
	// (and HasData false) when the event had no data line.
	Data []byte
	// ID is the value of the last "id:" line (nil when there was none).
	ID []byte
	// Raw is the exact bytes of the event on the wire, from the first byte
	// after the previous event through its terminating blank line, comments,
	// retry and unknown fields included. Writing every Raw in order
	// reproduces the stream byte for byte.
	Raw []byte

	hasData bool
}

// HasData reports whether the event had at least one "data:" line (a data
// line with an empty value gives HasData true and an empty Data), or, for an
// Event built by hand, a non-empty Data.
func (e *Event) HasData() bool { return e.hasData || len(e.Data) > 0 }

// IsComment reports whether the event carries no event, data or id field:
// only comments, blank lines, retry or unknown fields. Decoders skip such
// events; pass-through still writes their Raw.
func (e *Event) IsComment() bool { return !e.HasData() && e.Name == nil && e.ID == nil }

// ReaderOption configures a Reader or a JSONArrayReader.
type ReaderOption func(*readerConfig)

type readerConfig struct{ max int }

// WithMaxEventSize sets the size limit of one event (one array element for a
// JSONArrayReader), raw bytes included. n <= 0 keeps the default,
// DefaultMaxEventSize.
func WithMaxEventSize(n int) ReaderOption {
	return func(c *readerConfig) {
		if n > 0 {
			c.max = n
		}
	}
}

func newReaderConfig(opts []ReaderOption) readerConfig {
	c := readerConfig{max: DefaultMaxEventSize}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Reader splits an SSE byte stream into events. It accepts LF, CRLF and lone
// CR line endings, any chunking of the input, comments, and fields it does
// not know (kept in Raw). It reads from the underlying reader only when no
// complete event is buffered, so each event is returned as soon as its
// terminating blank line has arrived (for a blank line ending in a lone CR,
// once the next byte shows it is not a CRLF). Event boundaries, and so each
// Raw, do not depend on how the input is chunked.
//
// A Reader is not safe for concurrent use. In steady state Next does not
// allocate.
type Reader struct {
	src  io.Reader
	max  int
	buf  window
	err  error // read error, reported once buffered events are drained
	done bool  // the final event (or an error) has been returned

	// atStart: no line has been read yet (for the UTF-8 BOM).
	atStart bool

	// Fields of the event being read, as offsets relative to buf.start.
	name, id     field
	data         field // first data line
	ndata        int   // data lines seen
	dataBuf      []byte
	dataBufInUse bool

	ev Event // NextEvent's
}

// field is a value's position relative to the start of the event.
type field struct {
	set        bool
	start, end int
}

// initialWindow is the size a Reader's buffer starts at: an idle stream
// holds only this much (a stream's events are mostly smaller), and the
// buffer doubles, up to the size limit, when an event does not fit.
const initialWindow = 512

// NewReader returns a Reader reading from r.
func NewReader(r io.Reader, opts ...ReaderOption) *Reader {
	c := newReaderConfig(opts)
	return &Reader{src: r, max: c.max, atStart: true, buf: window{buf: make([]byte, min(initialWindow, c.max))}}
}

// Reset makes r read a new stream from src, keeping its buffers (and its
// size limit), as if it were NewReader(src) with the same options.
func (r *Reader) Reset(src io.Reader) {
	buf, dataBuf, max := r.buf.buf[:cap(r.buf.buf)], r.dataBuf[:0], r.max
	*r = Reader{src: src, max: max, atStart: true, buf: window{buf: buf}, dataBuf: dataBuf}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// if the stream ends inside an event (no terminating blank line), that
// partial event is returned first, with its fields parsed from the lines
// IsPresent and Raw holding the remaining bytes, and io.EOF comes on the next
// call. A read error other than io.EOF is returned as is, with an empty
// Event; the bytes of an unfinished event are dropped. An event longer than
// the size limit gives an error wrapping ErrEventTooLarge. After an error,
// Next keeps returning it.
//
// The returned slices are valid only until the next call to Next.
func (r *Reader) Next() (Event, error) {
	var ev Event
	err := r.nextInto(&ev)
	return ev, err
}

// nextInto is Next with the event stored in *ev (overwritten whole), built
// there and never in a frame of the reader's (NextEvent's caller keeps its
// goroutine's stack small).
func (r *Reader) nextInto(ev *Event) error {
	if r.done {
		*ev = Event{}
		return r.err
	}
	r.buf.discard()
	r.name, r.id, r.data, r.ndata, r.dataBufInUse = field{}, field{}, field{}, 0, false
	for {
		if r.scanLines(r.err == io.EOF) {
			r.event(ev)
			return nil
		}
		if r.err != nil {
			return r.finish(ev)
		}
		if err := r.buf.fill(r.src, r.max); err != nil {
			r.err = err
		}
	}
}

// NextEvent is Next with the event kept in the Reader: the pointer stays
// the same for the Reader's life and its event is valid until the next
// call. A caller that hands each event on through an interface (which
// would move an Event of its own to the heap) allocates nothing.
func (r *Reader) NextEvent() (*Event, error) {
	err := r.nextInto(&r.ev)
	return &r.ev, err
}

// finish handles the end of input with a possibly unfinished event pending.
func (r *Reader) finish(ev *Event) error {
	r.done = true
	*ev = Event{}
	if r.err != io.EOF {
		return r.err
	}
	w := &r.buf
	if w.pos == w.end && w.start == w.end {
		return io.EOF
	}
	if w.pos < w.end {
		r.line(w.pos, w.end)
		w.pos = w.end
	}
	r.event(ev)
	return nil
}

// scanLines processes the complete lines buffered after pos and reports
// whether a blank line ended an event (r.event reads it). A CR as the last
// buffered byte ends a line only at EOF: until the next byte arrives it may
// be the first half of a CRLF, and waiting keeps event boundaries
// independent of chunking.
func (r *Reader) scanLines(eof bool) bool {
	w := &r.buf
	b := w.buf
	for {
		from := max(w.pos, w.scan) // bytes before scan hold no line ending
		seg := b[from:w.end]
		i := bytes.IndexByte(seg, '\n')
		if i < 0 {
			i = len(seg)
		}
		if j := bytes.IndexByte(seg[:i], '\r'); j >= 0 {
			i = j
		}
		if i == len(seg) {
			w.scan = w.end
			return false // no complete line yet
		}
		lineStart, lineEnd := w.pos, from+i
		next := lineEnd + 1
		if b[lineEnd] == '\r' {
			if next == w.end && !eof {
				w.scan = lineEnd
				return false
			}
			if next < w.end && b[next] == '\n' {
				next++
			}
		}
		w.pos = next
		if lineStart == lineEnd {
			return true
		}
		r.line(lineStart, lineEnd)
	}
}

// line processes one non-empty line buf[s:e] of the current event.
func (r *Reader) line(s, e int) {
	b := r.buf.buf
	if r.atStart {
		r.atStart = false
		if bytes.HasPrefix(b[s:e], BOM) {
			s += len(BOM)
		}
	}
	if s == e || b[s] == ':' {
		return // comment (or a line that was only a BOM)
	}
	colon := bytes.IndexByte(b[s:e], ':')
	vs := e
	name := b[s:e]
	if colon >= 0 {
		name = b[s : s+colon]
		vs = s + colon + 1
		if vs < e && b[vs] == ' ' {
			vs++
		}
	}
	base := r.buf.start
	v := field{set: true, start: vs - base, end: e - base}
	switch string(name) {
	case "data":
		r.ndata++
		switch r.ndata {
		case 1:
			r.data = v
		case 2:
			r.dataBuf = append(r.dataBuf[:0], b[base+r.data.start:base+r.data.end]...)
			r.dataBufInUse = true
			fallthrough
		default:
			r.dataBuf = append(r.dataBuf, '\n')
			r.dataBuf = append(r.dataBuf, b[vs:e]...)
		}
	case "event":
		r.name = v
	case "id":
		r.id = v
	}
	// retry and unknown fields only live in Raw.
}

// BOM is the UTF-8 byte order mark a stream may start with (the SSE
// reader skips it; JSON stream decoders must too).
var BOM = []byte("\xef\xbb\xbf")

// event sets *ev to the Event for buf[start:pos].
func (r *Reader) event(ev *Event) {
	w := &r.buf
	raw := w.buf[w.start:w.pos:w.pos]
	*ev = Event{Raw: raw, hasData: r.ndata > 0}
	if r.name.set {
		ev.Name = raw[r.name.start:r.name.end:r.name.end]
	}
	if r.id.set {
		ev.ID = raw[r.id.start:r.id.end:r.id.end]
	}
	switch {
	case r.dataBufInUse:
		ev.Data = r.dataBuf
	case r.ndata == 1:
		ev.Data = raw[r.data.start:r.data.end:r.data.end]
	}
}

// window is a read buffer holding the unconsumed tail of a stream: bytes
// before start have been handed out and may be dropped; pos is how far they
// have been parsed; end is how far they have been read.
type window struct {
	buf             []byte
	start, pos, end int
	scan            int // bytes in [pos, scan) are known to hold no delimiter
	zeroReads       int
}

// discard drops everything before pos (the previously returned item).
func (w *window) discard() { w.start = w.pos }

// fill reads more bytes, first moving the pending bytes to the front of the
// buffer and growing it (up to limit) when it is full. It fails with
// ErrEventTooLarge when limit pending bytes do not complete an item.
func (w *window) fill(src io.Reader, limit int) error {
	if w.end-w.start >= limit {
		return fmt.Errorf("%w: more than %d bytes", ErrEventTooLarge, limit)
	}
	if w.start > 0 {
		n := copy(w.buf, w.buf[w.start:w.end])
		w.pos -= w.start
		w.scan = max(0, w.scan-w.start)
		w.end = n
		w.start = 0
	}
	if w.end == len(w.buf) {
		nb := make([]byte, min(limit, 2*len(w.buf)))
		copy(nb, w.buf[:w.end])
		w.buf = nb
	}
	n, err := src.Read(w.buf[w.end:])
	if n < 0 || n > len(w.buf)-w.end {
		return errors.New("rewrite: reader returned an invalid count")
	}
	w.end += n
	if n > 0 {
		w.zeroReads = 0
	} else if err == nil {
		w.zeroReads++
		if w.zeroReads >= 100 {
			return io.ErrNoProgress
		}
	}
	return err
}
