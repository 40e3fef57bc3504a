package proxy

import (
	"errors"
)

// errPathEscape is a request path shepherd refuses: one that could leave the
// upstream's configured path prefix, or that the upstream could read as a
// different path than the one shepherd routed.
var errPathEscape = errors.New("proxy: request path has a dot-segment, an empty segment, a backslash or an encoded slash, backslash or dot")

// pathEscapeMessage is what the client reads for errPathEscape (400).
const pathEscapeMessage = "request path must not contain dot-segments (. or ..), empty segments (//), " +
	"backslashes, or percent-encoded slashes, backslashes or dots"

// checkRequestPath checks the raw path of a request target (as sent, before
// any decoding or normalisation: fasthttp's URI.PathOriginal), which is
// exactly what shepherd appends to the upstream's path prefix. It returns
// errPathEscape when the path
//
//   - does not start with '/';
//   - has a segment "." or ".." (RFC 3986 §3.3 dot-segments), or an empty
//     segment ("//") anywhere but at the very end;
//   - contains a backslash, or a percent-encoded '.', '/' or '\'
//     (%2e, %2f, %5c in either case), which an upstream or a framework in
//     front of it may decode into one of the above.
//
// Anything else is forwarded byte for byte. It is a single pass over p and
// never allocates.
func checkRequestPath(p []byte) error {
	if len(p) == 0 || p[0] != '/' {
		return errPathEscape
	}
	segStart := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) {
			switch c := p[i]; c {
			case '\\':
				return errPathEscape
			case '%':
				if i+2 < len(p) && encodesSeparatorOrDot(p[i+1], p[i+2]) {
					return errPathEscape
				}
				continue
			case '/':
			default:
				continue
			}
		}
		// p[segStart:i] is one segment; i is at '/' or the end.
		switch seg := p[segStart:i]; {
		case len(seg) == 0 && i < len(p):
			return errPathEscape
		case len(seg) == 1 && seg[0] == '.', len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			return errPathEscape
		}
		segStart = i + 1
	}
	return nil
}

// encodesSeparatorOrDot reports whether %hl encodes '.', '/' or '\'.
func encodesSeparatorOrDot(h, l byte) bool {
	l |= 0x20 // lower-case a hex letter; digits are unaffected in this use
	switch h {
	case '2':
		return l == 'e' || l == 'f'
	case '5':
		return l == 'c'
	}
	return false
}
