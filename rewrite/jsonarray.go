package rewrite

import (
	"fmt"
	"io"
)

// JSONArrayReader splits a streamed JSON array (Gemini streamGenerateContent
// without alt=sse: `[{…}` `,\r\n{…}` … `]`) into its top-level elements as
// they complete, without waiting for the closing bracket. It accepts any
// chunking; strings may contain brackets, braces and escaped quotes.
//
// Elements are not validated: an element is whatever lies between the
// separators, with brackets and strings balanced. Decoders validate it.
//
// A JSONArrayReader is not safe for concurrent use.
type JSONArrayReader struct {
	src    io.Reader
	max    int
	buf    window
	err    error // read error, reported once buffered bytes are drained
	failed error // sticky syntax error
	done   bool

	state     arrState
	elemStart int // offset of the element being scanned, relative to buf.start
	depth     int
	inStr     bool
	esc       bool
	scalar    bool
}

type arrState uint8

const (
	arrBegin arrState = iota // before '['
	arrFirst                 // after '[': an element or ']'
	arrNext                  // after ',': an element
	arrElem                  // inside an element
	arrAfter                 // after an element: ',' or ']'
	arrEnd                   // after ']': only whitespace
)

// NewJSONArrayReader returns a JSONArrayReader reading from r. The size
// limit (WithMaxEventSize) bounds one element with the bytes before it.
func NewJSONArrayReader(r io.Reader, opts ...ReaderOption) *JSONArrayReader {
	c := newReaderConfig(opts)
	return &JSONArrayReader{src: r, max: c.max, buf: window{buf: make([]byte, min(4096, c.max))}}
}

// Next returns the next element and raw, the exact bytes consumed since the
// previous call: for an element, everything after the previous element
// (whitespace, the '[' or ',') through the element's last byte. The closing
// ']' and anything after it come back in calls with a nil elem and only raw.
// Concatenating raw over all calls reproduces the input exactly.
//
// At the end of input Next returns io.EOF. If the input is not a JSON array
// (or is cut short), Next returns the pending bytes as raw with an error
// wrapping ErrMalformedReply, and from then on returns every further chunk
// of input as raw with that same error, then (nil, nil, io.EOF); a caller
// that forwards raw regardless stays byte-faithful. A read error other than
// io.EOF is returned with nil elem and raw (pending bytes are dropped). An
// element longer than the size limit gives an error wrapping
// ErrEventTooLarge. After a read error or io.EOF, Next keeps returning it.
//
// elem and raw point into the reader's buffer and are valid only until the
// next call to Next.
func (a *JSONArrayReader) Next() (elem, raw []byte, err error) {
	if a.done {
		return nil, nil, a.err
	}
	w := &a.buf
	w.discard()
	for {
		if a.failed == nil {
			if elem, raw, ok := a.scan(); ok {
				return elem, raw, nil
			}
		}
		if a.failed != nil && w.pos < w.end {
			w.pos = w.end
			return nil, w.buf[w.start:w.end:w.end], a.failed
		}
		if a.err != nil {
			return a.finish()
		}
		if err := w.fill(a.src, a.max); err != nil {
			a.err = err
		}
	}
}

// finish handles the end of input.
func (a *JSONArrayReader) finish() (elem, raw []byte, err error) {
	w := &a.buf
	if a.err != io.EOF {
		a.done = true
		return nil, nil, a.err
	}
	if a.failed != nil || (a.state == arrEnd && w.start == w.end) ||
		(a.state == arrBegin && w.start == w.end) {
		a.done = true
		return nil, nil, io.EOF
	}
	w.pos = w.end
	if a.state == arrEnd {
		return nil, w.buf[w.start:w.end:w.end], nil // trailing whitespace
	}
	if a.state == arrElem && a.scalar && a.depth == 0 && !a.inStr {
		// A scalar element ending the input is still an element, but the
		// array was never closed.
		a.failed = fmt.Errorf("%w: JSON array stream ends without ']'", ErrMalformedReply)
		return nil, w.buf[w.start:w.end:w.end], a.failed
	}
	a.failed = fmt.Errorf("%w: JSON array stream ends early", ErrMalformedReply)
	return nil, w.buf[w.start:w.end:w.end], a.failed
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scan advances over buffered bytes and reports an element or the closing
// bracket when one completes.
func (a *JSONArrayReader) scan() (elem, raw []byte, ok bool) {
	w := &a.buf
	b := w.buf
	for w.pos < w.end {
		c := b[w.pos]
		switch a.state {
		case arrBegin, arrAfter, arrEnd:
			if isSpace(c) {
				w.pos++
				continue
			}
			switch {
			case a.state == arrBegin && c == '[':
				a.state = arrFirst
			case a.state == arrAfter && c == ',':
				a.state = arrNext
			case a.state == arrAfter && c == ']':
				w.pos++
				a.state = arrEnd
				return nil, w.buf[w.start:w.pos:w.pos], true
			default:
				a.fail(c)
				return nil, nil, false
			}
			w.pos++
		case arrFirst, arrNext:
			if isSpace(c) {
				w.pos++
				continue
			}
			if c == ']' && a.state == arrFirst {
				w.pos++
				a.state = arrEnd
				return nil, w.buf[w.start:w.pos:w.pos], true
			}
			if c == ',' || c == ']' || c == '}' || c == ':' {
				a.fail(c)
				return nil, nil, false
			}
			a.state = arrElem
			a.elemStart = w.pos - w.start
			a.depth, a.inStr, a.esc = 0, false, false
			a.scalar = c != '{' && c != '[' && c != '"'
		case arrElem:
			if done := a.step(c); done {
				s := w.start + a.elemStart
				a.state = arrAfter
				return b[s:w.pos:w.pos], b[w.start:w.pos:w.pos], true
			}
		}
	}
	return nil, nil, false
}

// step consumes one byte of an element and reports whether the element is
// complete (for a scalar, the delimiter after it is left unconsumed).
func (a *JSONArrayReader) step(c byte) bool {
	w := &a.buf
	if a.scalar {
		if isSpace(c) || c == ',' || c == ']' {
			return true
		}
		w.pos++
		return false
	}
	w.pos++
	if a.inStr {
		switch {
		case a.esc:
			a.esc = false
		case c == '\\':
			a.esc = true
		case c == '"':
			a.inStr = false
			return a.depth == 0
		}
		return false
	}
	switch c {
	case '"':
		a.inStr = true
	case '{', '[':
		a.depth++
	case '}', ']':
		a.depth--
		return a.depth <= 0
	}
	return false
}

func (a *JSONArrayReader) fail(c byte) {
	a.failed = fmt.Errorf("%w: unexpected %q in JSON array stream", ErrMalformedReply, c)
}
