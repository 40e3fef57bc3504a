package budgets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// The counters the hook keeps per session (state.Counters names).
const (
	counterTurns  = "turns"
	counterTokens = "tokens"
	counterCost   = "cost_micros"
	counterStreak = "streak"
	callsPrefix   = "calls:"
)

// Limits are a session's budgets; 0 leaves one unlimited.
type Limits struct {
	Turns, Tokens, CostMicros int64
	// IdenticalCalls is how many identical consecutive calls pass; the
	// next repeat is refused.
	IdenticalCalls int64
}

// Options configure a Hook.
type Options struct {
	Scope  hooks.Scope
	Limits Limits
	// Tools cap the calls per tool (first match); Owned tools (shepherd's
	// own, answered by other features) are never capped or counted.
	Tools    []ToolRule
	Owned    []string
	Counters state.Counters
	Log      *zap.Logger
	Events   events.Emitter
	Metrics  *metrics
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Staged: the state store reads a session's counters with the session
	// and commits the changes staged on it with the turn's save
	// (state.CounterPrefetcher, Session.StageCounters), so the hook decides
	// from the counters read at load and makes no round trip of its own
	// (staged.go). Off: every change is a Counters call.
	Staged bool
}

// Hook enforces the budgets. It is safe for concurrent use.
//
// Request side (OnRequest): an agent turn reserves one turn; every request
// (side requests too) reserves an estimate of its tokens and one
// micro-dollar of cost. A reservation that does not fit its budget answers
// the request with HTTP 429 (x-should-retry: false) saying which budget,
// its limit and what the session spent; what the request reserved before
// is given back. The turn's outcome (OnOutcome) replaces the estimates with
// the real spend.
//
// Reply side (OnReply): each tool call of the model extends the streak of
// identical calls and takes one call of its tool's cap; a call past either
// is refused with the reason, which the model reads in its tool result.
//
// A counter that cannot be read or written lets the request or call pass
// (fail-open), counted and logged.
type Hook struct {
	o       Options
	owned   map[string]bool
	pending pending
	flights flights
	// warned is when the last counter failure was logged (unix ns): at
	// most one warning every 10 s while the store is down.
	warned atomic.Int64
}

var (
	_ hooks.RequestHook = (*Hook)(nil)
	_ hooks.ReplyHook   = (*Hook)(nil)
	_ hooks.OutcomeHook = (*Hook)(nil)
)

// New returns a Hook.
func New(o Options) *Hook {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Events == nil {
		o.Events = events.Nop{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Hook{o: o, owned: map[string]bool{}}
	for _, t := range o.Owned {
		h.owned[t] = true
	}
	return h
}

// storeContext is the context of the counter calls: not the request's
// (the proxy's request context is reused once the request ends, and the
// outcome runs after the reply was written); the store bounds each call
// with its own timeout.
func storeContext() context.Context { return context.Background() }

// Name implements hooks.Hook.
func (h *Hook) Name() string { return Name }

// active reports whether the hook acts on call's session.
func (h *Hook) active(call *hooks.Call) (state.Key, bool) {
	key := state.Key{Tenant: call.Tenant, Session: call.SessionID}
	return key, h.o.Scope.Active(call, Name) && key.Valid()
}

// OnRequest implements hooks.RequestHook: it reserves the request's turn,
// tokens and cost, or refuses the request with HTTP 429.
func (h *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	ctx := storeContext()
	key, ok := h.active(call)
	if !ok {
		return conv.RequestEdits{}, nil, nil
	}
	h.giveBackExpired(ctx)
	if snap, ok := h.snapshot(call); ok {
		return conv.RequestEdits{}, h.requestStaged(call, key, req, snap), nil
	}
	lim := h.o.Limits
	r := &reservation{key: key, at: h.o.Now()}
	steps := []struct {
		budget, counter string
		n, limit        int64
		taken           *int64
	}{
		{budgetTurns, counterTurns, 1, lim.Turns, &r.turns},
		{budgetTokens, counterTokens, EstimateTokens(req), lim.Tokens, &r.tokens},
		{budgetCost, counterCost, 1, lim.CostMicros, &r.cost},
	}
	for _, s := range steps {
		if s.limit <= 0 || (s.budget == budgetTurns && call.Side != "") {
			continue
		}
		v, fits, err := h.o.Counters.Reserve(ctx, key, s.counter, s.n, s.limit)
		if err != nil {
			h.failed(call, "reserve "+s.counter, err)
			continue
		}
		if !fits {
			h.giveBack(ctx, call, r)
			return conv.RequestEdits{}, h.refuseRequest(call, s.budget, s.limit, v, s.n), nil
		}
		*s.taken = s.n
	}
	if r.turns != 0 || r.tokens != 0 || r.cost != 0 {
		h.pending.put(pendingID(key, call.RequestID), r)
	}
	return conv.RequestEdits{}, nil, nil
}

// OnReply implements hooks.ReplyHook: the loop and per-tool caps.
func (h *Hook) OnReply(_ context.Context, call *hooks.Call, reply *conv.Reply) (hooks.ReplyDecision, error) {
	ctx := storeContext()
	var d hooks.ReplyDecision
	key, ok := h.active(call)
	if !ok || call.Side != "" || (h.o.Limits.IdenticalCalls <= 0 && len(h.o.Tools) == 0) {
		return d, nil
	}
	if snap, ok := h.snapshot(call); ok {
		return h.replyStaged(call, key, reply, snap), nil
	}
	for _, c := range reply.ToolCalls {
		if h.owned[c.Name] {
			continue
		}
		if reason, refused := h.checkCall(ctx, call, key, c); refused {
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Refuse, Result: reason, Rule: Name})
		}
	}
	return d, nil
}

// checkCall records c in the streak and its tool's cap and says whether it
// is refused, with the reason the model is given.
func (h *Hook) checkCall(ctx context.Context, call *hooks.Call, key state.Key, c conv.ToolCall) (string, bool) {
	if lim := h.o.Limits.IdenticalCalls; lim > 0 {
		n, err := h.o.Counters.Streak(ctx, key, counterStreak, callSignature(c))
		switch {
		case err != nil:
			h.failed(call, "streak", err)
		case n > lim:
			h.reached(call, budgetIdentical, lim, n-1, c)
			return loopReason(n - 1), true
		}
	}
	limit := toolLimit(h.o.Tools, c.Name)
	if limit <= 0 {
		return "", false
	}
	v, fits, err := h.o.Counters.Reserve(ctx, key, callsPrefix+c.Name, 1, limit)
	switch {
	case err != nil:
		h.failed(call, "reserve calls", err)
		return "", false
	case !fits:
		h.reached(call, budgetToolCalls, limit, v, c)
		return toolReason(c.Name, limit, v), true
	}
	if c.ID != "" {
		id := pendingID(key, call.RequestID)
		r := h.pending.peek(id)
		if r == nil {
			r = &reservation{key: key, at: h.o.Now()}
			h.pending.put(id, r)
		}
		if r.counted == nil {
			r.counted = map[string]string{}
		}
		r.counted[c.ID] = c.Name
	}
	return "", false
}

// callSignature identifies a call for the streak: its tool and a hash of
// its argument bytes.
func callSignature(c conv.ToolCall) string {
	sum := sha256.Sum256(c.Args)
	return c.Name + "\x00" + hex.EncodeToString(sum[:16])
}

// OnOutcome implements hooks.OutcomeHook: it settles the request's
// reservation with what the turn spent, and gives back the calls it
// counted that never reached the agent (refused or claimed by another
// hook, dropped, undelivered).
//
// The spend is added to the session the turn was saved under: an opening
// request (no session id yet) is saved under the id of its continuation,
// which every later request of the conversation carries, so its turn and
// tokens move there.
func (h *Hook) OnOutcome(_ context.Context, call *hooks.Call, out *conv.TurnOutcome) error {
	ctx := storeContext()
	key, ok := h.active(call)
	if !ok || out == nil {
		return nil
	}
	r := h.pending.take(pendingID(key, call.RequestID))
	if r != nil && r.staged {
		h.outcomeStaged(call, key, r, out)
		return nil
	}
	if _, staged := h.snapshot(call); staged {
		return nil // the save added the spend; nothing was held, or it was released
	}
	swept := r == nil // given back after holdFor, or never taken (a counter failed)
	if swept {
		r = &reservation{key: key}
	}
	to := key
	if s := call.Saved; s != nil && s.ID != "" && (s.ID != key.Session || s.Tenant != key.Tenant) {
		to = state.Key{Tenant: s.Tenant, Session: s.ID}
	}
	lim, u := h.o.Limits, out.Usage
	if lim.Tokens > 0 {
		h.move(ctx, call, counterTokens, key, to, r.tokens, u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens)
	}
	if lim.CostMicros > 0 {
		h.move(ctx, call, counterCost, key, to, r.cost, micros(out.CostUSD))
	}
	switch {
	case r.turns > 0:
		h.move(ctx, call, counterTurns, key, to, r.turns, 1)
	case swept && lim.Turns > 0 && call.Side == "":
		h.move(ctx, call, counterTurns, key, to, 0, 1) // the turn counts once
	}
	for _, o := range out.Calls {
		tool, counted := r.counted[o.Call.ID]
		if !counted || o.Fate == conv.FateDelivered || (o.Fate == conv.FateRefused && o.Hook == Name) {
			continue
		}
		if _, err := h.o.Counters.Add(ctx, key, callsPrefix+tool, -1); err != nil {
			h.failed(call, "give back a call", err)
		}
	}
	return nil
}

// move replaces reserved on from's counter with actual on to's.
func (h *Hook) move(ctx context.Context, call *hooks.Call, counter string, from, to state.Key, reserved, actual int64) {
	add := func(k state.Key, n int64) {
		if n == 0 {
			return
		}
		if _, err := h.o.Counters.Add(ctx, k, counter, n); err != nil {
			h.failed(call, "commit "+counter, err)
		}
	}
	if from == to {
		add(from, actual-reserved)
		return
	}
	add(from, -reserved)
	add(to, actual)
}

// giveBack returns what r reserved (a request refused by a later budget).
func (h *Hook) giveBack(ctx context.Context, call *hooks.Call, r *reservation) {
	h.move(ctx, call, counterTurns, r.key, r.key, r.turns, 0)
	h.move(ctx, call, counterTokens, r.key, r.key, r.tokens, 0)
	h.move(ctx, call, counterCost, r.key, r.key, r.cost, 0)
}

// giveBackExpired returns the reservations of requests that got no outcome
// within holdFor (see holdFor).
func (h *Hook) giveBackExpired(ctx context.Context) {
	expired, swept := h.pending.expired(h.o.Now())
	if swept {
		defer h.flights.sweep(h.o.Now())
	}
	for _, r := range expired {
		if r.staged {
			h.flights.release(r, h.o.Now()) // nothing was written: only held
			continue
		}
		for _, x := range []struct {
			counter string
			n       int64
		}{{counterTurns, -r.turns}, {counterTokens, -r.tokens}, {counterCost, -r.cost}} {
			if x.n == 0 {
				continue
			}
			if _, err := h.o.Counters.Add(ctx, r.key, x.counter, x.n); err != nil {
				h.o.Metrics.failed()
			}
		}
	}
}

// failed counts a counter failure and logs it (at most every 10 s); the
// request or call passes.
func (h *Hook) failed(call *hooks.Call, op string, err error) {
	h.o.Metrics.failed()
	now := h.o.Now().UnixNano()
	last := h.warned.Load()
	if now-last < int64(10*time.Second) || !h.warned.CompareAndSwap(last, now) {
		return
	}
	h.o.Log.Warn("budgets: counters unavailable; passing (fail-open)", zap.String("op", op),
		zap.String("request_id", call.RequestID), zap.String("session", call.SessionID), zap.Error(err))
}
