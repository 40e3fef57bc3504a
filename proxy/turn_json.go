package proxy

import (
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
)

// headerRecoveryAttempts reports, on a non-streaming reply, how many
// continuations truncation recovery made for it.
const headerRecoveryAttempts = "X-Shepherd-Recovery-Attempts"

// turnJSON is the turn engine's writer for a complete reply: it reads each
// reply whole and writes the merged copy to the client at the end.
type turnJSON struct {
	ctx   *fasthttp.RequestCtx
	watch *clientWatch       // the client's connection, nil when not watched
	resp  *fasthttp.Response // the first reply, until read
	next  []byte             // a follow-up's reply, read by Follow
}

var _ turn.Writer = (*turnJSON)(nil)

// Read implements turn.Writer: a reply with a status other than 200 is
// not the model's reply and is passed on as it came.
func (w *turnJSON) Read() ([]byte, bool, error) {
	if w.resp == nil {
		next := w.next
		w.next = nil
		return next, true, nil
	}
	status := w.resp.StatusCode()
	body, err := readAll(w.resp)
	fasthttp.ReleaseResponse(w.resp)
	w.resp = nil
	if err != nil {
		return nil, false, err
	}
	return body, status == fasthttp.StatusOK, nil
}

// Release implements turn.Writer: nothing reaches the client before Finish.
func (w *turnJSON) Release(remove, first []int) error { return nil }

// Follow implements turn.Writer: it reads the follow-up's reply whole.
func (w *turnJSON) Follow(resp *fasthttp.Response, _ bool) error {
	defer fasthttp.ReleaseResponse(resp)
	b, err := readAll(resp)
	if err != nil {
		return err
	}
	if status := resp.StatusCode(); status != fasthttp.StatusOK {
		return fmt.Errorf("proxy: follow-up answered %d", status)
	}
	w.next = b
	return nil
}

// KeepAlive implements turn.Writer: nothing can reach the client before
// the reply, so it only reports a client that left.
func (w *turnJSON) KeepAlive() error {
	if w.watch.left() {
		return turn.ErrClientGone
	}
	return nil
}

// Finish implements turn.Writer.
func (w *turnJSON) Finish(f turn.Final) {
	w.ctx.Response.SetBodyRaw(f.Reply)
	if f.Session != "" {
		w.ctx.Response.Header.Set(headerSession, f.Session)
	}
	if f.Continuations > 0 {
		w.ctx.Response.Header.Set(headerRecoveryAttempts, strconv.Itoa(f.Continuations))
	}
}
