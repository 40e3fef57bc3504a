package proxy

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
)

// This file emits the proxy's own events to the live feed (docs/events.md):
// request.started once a model request's session is known, and
// request.finished once its reply ended (for a streamed turn, when the
// stream ended; for a stream shepherd runs no turn on, when its headers
// were sent). The turn engine emits the call and continuation events,
// the features their own.

// emitterOrNop returns em, or events.Nop when em is nil.
func emitterOrNop(em events.Emitter) events.Emitter {
	if em == nil {
		return events.Nop{}
	}
	return em
}

// requestFeed is what the feed knows of one request (exchange.feed).
type requestFeed struct {
	started bool // request.started was emitted; request.finished is due
	done    bool // request.finished was emitted, or is the stream writer's
	model   string
	turn    *turn.Turn // nil: no turn ran
}

// handOff marks the request's request.finished as the stream writer's
// (its copy of the exchange emits it when the stream ends).
func (f *requestFeed) handOff() { f.done = true }

// requestStarted emits request.started for a model request that belongs to
// a session (a request without one has no feed).
func (s *Server) requestStarted(x *exchange, in *inspection) {
	if _, off := s.events.(events.Nop); off || !x.route.inspect || x.call.SessionID == "" {
		return // with the feed off, a request pays nothing for it
	}
	x.feed.started = true
	stream := in.stream()
	if in.view != nil {
		x.feed.model = in.view.Model
		stream = in.view.Stream
	}
	s.events.Emit(events.Event{
		Type: events.RequestStarted, At: x.start, Session: x.call.SessionID, Tenant: x.call.Tenant,
		Route: x.route.name, RequestID: x.requestID,
		Data: map[string]any{"model": x.feed.model, "agent": x.call.Agent, "stream": stream, "side": x.call.Side},
	})
}

// finishedKeys is the most keys a request.finished event's data holds.
const finishedKeys = 13

// requestFinished emits request.finished once for a request whose
// request.started was emitted: status is the agent's response status, the
// rest comes from the turn's outcome when a turn ran.
func (s *Server) requestFinished(x *exchange, status int) {
	if !x.feed.started || x.feed.done {
		return
	}
	x.feed.done = true
	now := time.Now()
	// Sized for every key below: a map grown from the default size was
	// rehashed twice per request (pprof: most of requestFinished).
	data := make(map[string]any, finishedKeys)
	data["status"], data["duration_ms"], data["model"] = status, now.Sub(x.start).Milliseconds(), x.feed.model
	data["stop"], data["rounds"], data["continuations"] = "", 0, 0
	data["overhead_ms"] = overheadMillis(x.ownTime())
	var failure error
	if t := x.feed.turn; t != nil {
		o := t.Outcome()
		u := o.Usage
		data["stop"], data["rounds"], data["continuations"] = string(o.Stop), o.Rounds, o.Continuations
		data["usage"] = map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens,
		}
		if usd, priced := t.Cost(); priced {
			data["cost_usd"] = usd
		}
		if p, ok := t.Prefix(); ok {
			data["prefix_hash"], data["prefix_break_offset"], data["prefix_break_cause"] = p.Hash, p.BreakOffset, p.Cause
		}
		failure = o.Err
	}
	switch {
	case errors.Is(failure, turn.ErrClientGone) || status == statusClientClosed:
		// A streamed reply's headers said 200; the agent left before its
		// end, which the feed reports as the proxy's logs do.
		data["status"], data["error"] = statusClientClosed, "client went away"
	case failure != nil:
		data["error"] = config.RedactText(failure.Error())
	case status >= 400:
		data["error"] = fasthttp.StatusMessage(status)
	}
	s.events.Emit(events.Event{
		Type: events.RequestFinished, At: now, Session: x.call.SessionID, Tenant: x.call.Tenant,
		Route: x.route.name, RequestID: x.requestID, Data: data,
	})
}
