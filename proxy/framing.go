package proxy

import (
	"bytes"
	"errors"
)

// errAmbiguousFraming is a request whose body length the headers do not
// state unambiguously (RFC 9112 §6.1, §6.3). A front end and a back end that
// resolve the ambiguity differently disagree on where the next request
// starts (request smuggling), so such a request is refused and its
// connection closed.
var errAmbiguousFraming = errors.New("proxy: ambiguous request framing")

// Messages the client reads for errAmbiguousFraming (400).
const (
	framingBothMessage    = "request has both Content-Length and Transfer-Encoding"
	framingCodingMessage  = "request Transfer-Encoding must be exactly chunked"
	framingLengthsMessage = "request has several differing or malformed Content-Length values"
)

var (
	hdrContentLength    = []byte("content-length")
	hdrTransferEncoding = []byte("transfer-encoding")
	codingChunked       = []byte("chunked")
)

// checkFraming reads the request's header block as received (fasthttp's
// RequestHeader.RawHeaders: every line, in order, with repeats, which the
// parsed header keeps only one of) and returns the client message and
// errAmbiguousFraming when
//
//   - both Content-Length and Transfer-Encoding are present;
//   - Transfer-Encoding lists anything but exactly one "chunked" (across all
//     its lines), e.g. identity, gzip, or "chunked, chunked";
//   - Content-Length appears with values that differ, or one that is not a
//     decimal number (a list "5, 5" of equal values is accepted, §6.3).
//
// fasthttp itself refuses some of these (duplicate Content-Length lines,
// unsupported codings) but lets Transfer-Encoding win silently over
// Content-Length and accepts "identity", which is why the raw block is read.
func checkFraming(raw []byte) (string, error) {
	var (
		teSeen, clSeen bool
		teCodings      int
		teBad          bool
		clValue        []byte
		clBad          bool
	)
	for len(raw) > 0 {
		var line []byte
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			line, raw = raw, nil
		}
		line = bytes.TrimRight(line, "\r")
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue // the request line's remains or the blank line; fasthttp validated the rest
		}
		name, value := line[:colon], line[colon+1:]
		switch {
		case asciiEqualFold(name, hdrTransferEncoding):
			teSeen = true
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				if len(tok) == 0 {
					continue // empty list elements are allowed (RFC 9110 §5.6.1)
				}
				teCodings++
				if !asciiEqualFold(tok, codingChunked) {
					teBad = true
				}
			}
		case asciiEqualFold(name, hdrContentLength):
			clSeen = true
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				switch {
				case len(tok) == 0 || !allDigits(tok):
					clBad = true
				case clValue == nil:
					clValue = tok
				case !bytes.Equal(clValue, tok):
					clBad = true
				}
			}
		}
	}
	switch {
	case teSeen && clSeen:
		return framingBothMessage, errAmbiguousFraming
	case teSeen && (teBad || teCodings != 1):
		return framingCodingMessage, errAmbiguousFraming
	case clBad:
		return framingLengthsMessage, errAmbiguousFraming
	}
	return "", nil
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// asciiEqualFold compares b to the lower-case ASCII word lower, ignoring the
// case of b.
func asciiEqualFold(b, lower []byte) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
