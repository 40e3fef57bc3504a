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
		Fields: &events.RequestStartedData{Model: x.feed.model, Agent: x.call.Agent, Stream: stream, Side: x.call.Side},
	})
}

// requestFinished emits request.finished once for a request whose
// request.started was emitted: status is the agent's response status, the
// rest comes from the turn's outcome when a turn ran.
func (s *Server) requestFinished(x *exchange, status int) {
	if !x.feed.started || x.feed.done {
		return
	}
	x.feed.done = true
	now := time.Now()
	d := &events.RequestFinishedData{
		Status: status, DurationMS: now.Sub(x.start).Milliseconds(), Model: x.feed.model,
		OverheadMS: overheadMillis(x.ownTime()),
	}
	var failure error
	if t := x.feed.turn; t != nil {
		o := t.Outcome()
		u := o.Usage
		d.Stop, d.Rounds, d.Continuations = string(o.Stop), o.Rounds, o.Continuations
		d.Usage = &events.RequestUsage{
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
		}
		d.CostUSD, d.Priced = t.Cost()
		if p, ok := t.Prefix(); ok {
			d.Prefix = &events.RequestPrefix{Hash: p.Hash, BreakOffset: p.BreakOffset, Cause: p.Cause}
		}
		failure = o.Err
	}
	switch {
	case errors.Is(failure, turn.ErrClientGone) || status == statusClientClosed:
		// A streamed reply's headers said 200; the agent left before its
		// end, which the feed reports as the proxy's logs do.
		d.Status, d.Error = statusClientClosed, "client went away"
	case failure != nil:
		d.Error = config.RedactText(failure.Error())
	case status >= 400:
		d.Error = fasthttp.StatusMessage(status)
	}
	s.events.Emit(events.Event{
		Type: events.RequestFinished, At: now, Session: x.call.SessionID, Tenant: x.call.Tenant,
		Route: x.route.name, RequestID: x.requestID, Fields: d,
	})
}
