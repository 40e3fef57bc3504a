package proxy

// jsonArrayStream follows a streamed JSON array (Gemini's
// :streamGenerateContent without alt=sse: `[{...}` `,\r\n{...}` ... `]`) so
// that what reaches the client is always a prefix that ends between two
// elements, and a stream that breaks can be closed with an error element
// into a body that parses as a JSON array.
//
// scan is fed the stream's bytes in order and says how many of them may be
// sent: every byte up to the last point between elements (after the
// opening bracket, after an element, after a comma). The bytes of an element
// still arriving are held by the caller until it is complete; an upstream
// sends whole elements, so nothing is held in practice. A body that is not a
// JSON array (an upstream error object) passes through untouched.
type jsonArrayStream struct {
	depth    int // 0 until the opening bracket; then 1 between elements
	inStr    bool
	esc      bool
	inScalar bool
	other    bool // the body is not a JSON array: pass it through
	done     bool // the array's closing bracket was seen
	last     byte // last sent token at depth 1: '[', ',' or 'v' (a value)
}

// scan advances over p and returns the length of its longest prefix that
// ends, together with everything before it, between two elements; 0 when
// p has no such point (the caller holds p with what it held before).
func (a *jsonArrayStream) scan(p []byte) int {
	if a.other || a.done {
		return len(p)
	}
	commit := 0
	// Every branch that sets other or done returns at once.
	for i, c := range p {
		if a.inStr {
			switch {
			case a.esc:
				a.esc = false
			case c == '\\':
				a.esc = true
			case c == '"':
				a.inStr = false
				if a.depth == 1 {
					a.last, commit = 'v', i+1
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			if a.depth == 0 {
				commit = i + 1
			} else if a.depth == 1 {
				if a.inScalar {
					a.inScalar, a.last = false, 'v'
				}
				commit = i + 1
			}
		case '[', '{':
			if a.depth == 0 {
				if c != '[' {
					a.other = true
					return len(p)
				}
				a.depth, a.last, commit = 1, '[', i+1
				continue
			}
			a.depth++
		case ']', '}':
			a.depth--
			a.inScalar = false
			switch {
			case a.depth <= 0:
				a.done = true
				return len(p)
			case a.depth == 1:
				a.last, commit = 'v', i+1
			}
		case ',':
			if a.depth == 1 {
				a.inScalar, a.last, commit = false, ',', i+1
			}
		case '"':
			if a.depth == 0 {
				a.other = true
				return len(p)
			}
			a.inStr = true
		default:
			if a.depth == 0 {
				a.other = true
				return len(p)
			}
			if a.depth == 1 {
				a.inScalar = true
			}
		}
	}
	return commit
}

// complete reports whether the stream ended well: the array was closed, or
// the body was not an array (nothing to check).
func (a *jsonArrayStream) complete() bool { return a.done || a.other }

// errorTail returns the bytes that close the array sent so far with elem
// (a JSON value: the API's error object) as its last element, or nil when
// there is no array to close (the body is not an array, or it was closed).
// An element after another is preceded by ",\r\n", the separator Gemini
// itself uses.
func (a *jsonArrayStream) errorTail(elem []byte) []byte {
	if a.other || a.done {
		return nil
	}
	out := make([]byte, 0, len(elem)+4)
	switch {
	case a.depth == 0:
		out = append(out, '[')
	case a.last == 'v':
		out = append(out, ",\r\n"...)
	}
	out = append(out, elem...)
	return append(out, ']')
}
