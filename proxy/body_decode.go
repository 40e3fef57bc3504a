package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"
	"github.com/valyala/fasthttp"
)

// maxContentCodings bounds the codings one request may stack.
const maxContentCodings = 3

// requestBody returns the body of the request rt classified. On model routes
// (rt.inspect), which features read, a body sent with Content-Encoding gzip,
// deflate, br or zstd (or a list of them) is decoded first, to at most
// limit bytes, and the request is left carrying the decoded body without
// Content-Encoding (fasthttp writes the upstream request's Content-Length
// from the body), so what shepherd read is what the upstream reads. (A body
// whose top-level object repeats a key is refused when it is parsed:
// rewrite.ParseBody.) Errors: errBodyTooLarge (413) over limit,
// errUnsupportedEncoding (415), errBadEncoding (400). Other routes' bodies
// pass as sent.
func requestBody(ctx *fasthttp.RequestCtx, rt route, limit int) ([]byte, error) {
	body := ctx.PostBody()
	if !rt.inspect {
		return body, nil
	}
	if codings := contentCodings(&ctx.Request.Header); len(codings) > 0 {
		decoded, err := decodeBody(body, codings, limit)
		if err != nil {
			return nil, err
		}
		ctx.Request.Header.Del(fasthttp.HeaderContentEncoding)
		ctx.Request.SetBodyRaw(decoded)
		body = decoded
	}
	return body, nil
}

// contentCodings is the request's Content-Encoding header values, one per
// header line, empty ones included: requestBody decodes a model request's
// body that has any, so such a body is neither forwarded while it arrives
// (cutThroughCandidate) nor compared as it arrives (prefetchBody): what
// arrives is not what is parsed. (Peek alone reads the first line only,
// and an empty first line hid a coding named on the next.)
func contentCodings(h *fasthttp.RequestHeader) [][]byte {
	return h.PeekAll(fasthttp.HeaderContentEncoding)
}

// decodeBody undoes the content codings listed in the Content-Encoding
// header values, last applied first (RFC 9110 §8.4). The result is at most
// limit bytes after every step; more is errBodyTooLarge, so a small
// compressed bomb never expands in memory beyond limit.
func decodeBody(body []byte, headerValues [][]byte, limit int) ([]byte, error) {
	var codings [][]byte
	for _, v := range headerValues {
		for tok := range bytes.SplitSeq(v, []byte(",")) {
			if tok = bytes.TrimSpace(tok); len(tok) > 0 && !asciiEqualFold(tok, []byte("identity")) {
				codings = append(codings, tok)
			}
		}
	}
	if len(codings) > maxContentCodings {
		return nil, fmt.Errorf("%w: %d codings", errUnsupportedEncoding, len(codings))
	}
	for i := len(codings) - 1; i >= 0; i-- {
		var err error
		if body, err = decodeOne(body, codings[i], limit); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// decodeOne undoes one content coding.
func decodeOne(body, coding []byte, limit int) ([]byte, error) {
	var r io.Reader
	var closeFn func()
	switch {
	case asciiEqualFold(coding, []byte("gzip")), asciiEqualFold(coding, []byte("x-gzip")):
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", errBadEncoding, err)
		}
		r = zr
	case asciiEqualFold(coding, []byte("deflate")):
		// HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2); some
		// clients send raw deflate, which has no zlib header.
		if zr, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(body))
		}
	case asciiEqualFold(coding, []byte("br")):
		br := brotli.NewReader(bytes.NewReader(body))
		r, closeFn = br, func() { _ = br.Close() }
	case asciiEqualFold(coding, []byte("zstd")):
		zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)+1),
			zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %w", errBadEncoding, err)
		}
		r, closeFn = zr, zr.Close
	default:
		return nil, errUnsupportedEncoding
	}
	if closeFn != nil {
		defer closeFn()
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	switch {
	case len(out) > limit:
		return nil, fmt.Errorf("%w: decoded body over %d bytes", errBodyTooLarge, limit)
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return nil, fmt.Errorf("%w: %w", errBodyTooLarge, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %w", errBadEncoding, coding, err)
	}
	return out, nil
}
