package proxy

import (
	"fmt"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
)

// upstreamSender sends a turn's follow-ups and continuations upstream with
// the agent's request line and headers: tmpl, or on a stream (whose writer
// runs after the handler returned) head, parsed at the first send.
type upstreamSender struct {
	s    *Server
	x    *exchange
	tmpl *fasthttp.Request
	head requestHead
}

var _ turn.Sender = (*upstreamSender)(nil)

// Send implements turn.Sender.
func (u *upstreamSender) Send(body []byte) (*fasthttp.Response, error) {
	if u.tmpl == nil {
		tmpl, err := u.head.request()
		if err != nil {
			return nil, err
		}
		u.tmpl = tmpl
	}
	resp, err := u.s.sendFollowUp(u.tmpl, u.x, body)
	if err != nil && u.x.watch.left() {
		return nil, fmt.Errorf("%w: %w", turn.ErrClientGone, err)
	}
	return resp, err
}

// sendFollowUp sends body upstream and returns the response with its body
// not yet read (streamed). The caller releases it.
func (s *Server) sendFollowUp(tmpl *fasthttp.Request, x *exchange, body []byte) (*fasthttp.Response, error) {
	// The turn's follow-ups go where its first request went, with the
	// same model (route_select.go).
	up := s.upstreamOf(x)
	body, err := x.target.followUpBody(body)
	if err != nil {
		return nil, err
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	prepareUpstreamRequest(req, tmpl, up, body, true)
	x.target.apply(req, up)
	if x.trace != nil {
		x.trace.roundStarted(req, up, x.target.model)
	}
	setWatchedBody(req, resp, body, x.watch)
	t0 := time.Now()
	err = up.client.DoTimeout(req, resp, s.cfg.Limits.UpstreamTimeout)
	x.upWait += time.Since(t0)
	if x.trace != nil {
		x.trace.roundResponded(resp, err)
	}
	if err == nil {
		x.watch.received(resp, "")
	} else {
		x.watch.received(nil, phaseWaitingUpstream)
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		return nil, classifyUpstreamError(err)
	}
	return resp, nil
}

// readInto is io.ReadAll appending to b: io.EOF ends it without error.
// Once b is full it probes with a small read, so that a body of exactly
// b's capacity is not copied into a larger buffer to find its end.
func readInto(r io.Reader, b []byte) ([]byte, error) {
	var probe [64]byte
	for {
		var n int
		var err error
		if len(b) < cap(b) {
			n, err = r.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
		} else {
			n, err = r.Read(probe[:])
			b = append(b, probe[:n]...)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// maxPresizedBody bounds the buffer readAll allocates from a Content-Length
// before reading: a larger announced reply is read as it comes.
const maxPresizedBody = 8 << 20

// readAll reads a (possibly streamed) upstream body completely.
func readAll(resp *fasthttp.Response) ([]byte, error) {
	bs := resp.BodyStream()
	if bs == nil {
		return append([]byte(nil), resp.Body()...), nil
	}
	var b []byte
	var err error
	if n := resp.Header.ContentLength(); n > 0 && n <= maxPresizedBody {
		// One allocation of the announced size instead of io.ReadAll's
		// doubling from 512 bytes (a fifth of the bytes a small hooks-on
		// turn allocated); what comes beyond it is read as io.ReadAll would.
		b, err = readInto(bs, make([]byte, 0, n))
	} else {
		b, err = io.ReadAll(bs)
	}
	if cerr := resp.CloseBodyStream(); err == nil {
		err = cerr
	}
	return b, err
}
