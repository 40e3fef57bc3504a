package proxy

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/valyala/fasthttp"
)

// requestHead is a client request's line and headers in wire form: what a
// streamed turn keeps of the agent's request for its follow-ups, which are
// rare. A copy of the parsed request (fasthttp.Request with its header and
// URI) costs about 2 KB more per open stream than these bytes; the head is
// parsed back only when a follow-up is actually sent.
type requestHead []byte

// newRequestHead copies h's request line and headers. It renders them
// straight into the copy: h.Header() would render them into a buffer of
// h's, which the connection then keeps for as long as the stream is open.
func newRequestHead(h *fasthttp.RequestHeader) requestHead {
	return requestHead(h.AppendBytes(nil))
}

// request parses the head back into a request without a body, with the
// same request line, URI and headers as the one the head was taken from.
func (h requestHead) request() (*fasthttp.Request, error) {
	req := &fasthttp.Request{}
	if err := req.Header.Read(bufio.NewReaderSize(bytes.NewReader(h), len(h)+64)); err != nil {
		return nil, fmt.Errorf("proxy: re-reading the agent's request head: %w", err)
	}
	return req, nil
}
