package budgets

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Staged counting (Options.Staged: the store reads the counters with the
// session and commits counter changes with the turn's save, so budgets add
// no round trip of their own).
//
// A request is decided from the counters read with its session plus what
// this replica's other requests of the session hold in flight (reserved,
// not yet saved). What it reserves is held in flight until its save lands;
// the save adds the real spend (the turn, its tokens and cost, the tool
// calls passed, the streak), atomically with the session write.
//
// Consistency: the counters themselves are exact (each save adds its spend
// atomically; a conflict retried applies it once). Admission is exact for
// requests of a session that follow each other, and for concurrent ones on
// one replica except in one window: a request that loaded the session
// before another's save landed and decides after it misses that spend.
// Across replicas, concurrent requests of one session each see only what
// the others saved: each may pass the last unit of a budget. The
// over-spend is bounded by what the requests concurrently in flight spend
// (one turn, its tokens and cost, the calls of its replies, each).

// emptySnapshot is the counters of a session not stored yet.
var emptySnapshot = &state.CounterSnapshot{Values: map[string]int64{}, Sigs: map[string]string{}}

// snapshot returns the counters read with the call's session when the
// turn's save will carry the counter changes; false when the hook uses the
// store's Counters directly (Options.Staged off; the session could not be
// read; the session was read without its counters; a side request of a
// session not stored yet, whose save would create it).
func (h *Hook) snapshot(call *hooks.Call) (*state.CounterSnapshot, bool) {
	s := call.Session
	if !h.o.Staged || s == nil || call.StateUnavailable {
		return nil, false
	}
	if snap, ok := s.Counters(); ok {
		return snap, true
	}
	if s.Version == 0 && call.Side == "" {
		return emptySnapshot, true
	}
	return nil, false
}

// landedGrace is how long the holds of a save that landed are kept for
// requests that read the session before it (load, then decide, back to
// back in one request; a request still open keeps them longer). Counting
// them for such a request is always right; dropping them too early would
// let it miss that save's spend.
const landedGrace = 10 * time.Second

// maxLanded caps the landed holds kept per session (the oldest go first):
// a request misses one only if that many saves of its session landed
// between its load and its decision, microseconds apart.
const maxLanded = 16

// flights are what this replica's requests hold, per session: open
// requests (deciding, or waiting for their save) and the holds of saves
// that landed, by the session version they landed as, counted for the
// requests that read an older version (whose counters lack them).
type flights struct {
	mu sync.Mutex
	by map[state.Key]*sessionFlights
}

type sessionFlights struct {
	open   []*reservation
	landed []landedHold
}

type landedHold struct {
	version int64
	at      time.Time
	held    map[string]int64
}

// open registers r, which read its session at r.base.
func (f *flights) open(r *reservation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[state.Key]*sessionFlights{}
	}
	sf := f.by[r.key]
	if sf == nil {
		sf = &sessionFlights{}
		f.by[r.key] = sf
	}
	sf.open = append(sf.open, r)
}

// sum returns, by counter, what key's requests hold beyond the counters
// read at version base: every open request's holds and the landed ones of
// later versions.
func (f *flights) sum(key state.Key, base int64) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	sf := f.by[key]
	if sf == nil {
		return out
	}
	for _, r := range sf.open {
		for k, v := range r.held {
			out[k] += v
		}
	}
	for _, l := range sf.landed {
		if l.version > base {
			for k, v := range l.held {
				out[k] += v
			}
		}
	}
	return out
}

// hold records that open request r holds n more of counter.
func (f *flights) hold(r *reservation, counter string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.held == nil {
		r.held = map[string]int64{}
	}
	r.held[counter] += n
}

// landed moves r's holds to the session version its save landed as.
func (f *flights) landed(r *reservation, version int64, now time.Time) { f.close(r, version, now) }

// release drops r's holds: its save failed, or will never come.
func (f *flights) release(r *reservation, now time.Time) { f.close(r, 0, now) }

// close ends r (a second close does nothing): its holds are kept as
// landed at version (> 0), or dropped.
func (f *flights) close(r *reservation, version int64, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sf := f.by[r.key]
	if sf == nil {
		return
	}
	i := slices.Index(sf.open, r)
	if i < 0 {
		return
	}
	sf.open = slices.Delete(sf.open, i, i+1)
	if version > 0 && len(r.held) > 0 {
		sf.landed = append(sf.landed, landedHold{version: version, at: now, held: r.held})
		if len(sf.landed) > maxLanded {
			sf.landed = slices.Delete(sf.landed, 0, len(sf.landed)-maxLanded)
		}
	}
	f.pruneLocked(r.key, sf, now)
}

// pruneLocked drops the landed holds past landedGrace that no open request
// of the session needs (each read a version that has them).
func (f *flights) pruneLocked(key state.Key, sf *sessionFlights, now time.Time) {
	oldest := int64(math.MaxInt64)
	for _, o := range sf.open {
		oldest = min(oldest, o.base)
	}
	sf.landed = slices.DeleteFunc(sf.landed, func(l landedHold) bool {
		return l.version <= oldest && now.Sub(l.at) >= landedGrace
	})
	if len(sf.open) == 0 && len(sf.landed) == 0 {
		delete(f.by, key)
	}
}

// sweep prunes every session (giveBackExpired calls it once a minute).
func (f *flights) sweep(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, sf := range f.by {
		f.pruneLocked(key, sf, now)
	}
}

// requestStaged is OnRequest in staged counting: it decides the request's
// budgets from snap and what is in flight, holds what it reserves and
// stages the turn's spend for its save; a refusal holds and stages
// nothing.
func (h *Hook) requestStaged(call *hooks.Call, key state.Key, req *conv.Request, snap *state.CounterSnapshot) *hooks.Response {
	lim := h.o.Limits
	r := &reservation{key: key, at: h.o.Now(), staged: true, base: call.Session.Version}
	h.flights.open(r)
	held := h.flights.sum(key, r.base)
	steps := []struct {
		budget, counter string
		n, limit        int64
		spend           state.Spend
		taken           *int64
	}{
		{budgetTurns, counterTurns, 1, lim.Turns, state.SpendTurns, &r.turns},
		{budgetTokens, counterTokens, EstimateTokens(req), lim.Tokens, state.SpendTokens, &r.tokens},
		{budgetCost, counterCost, 1, lim.CostMicros, state.SpendCostMicros, &r.cost},
	}
	var ops []state.CounterOp
	for _, s := range steps {
		if s.limit <= 0 || (s.budget == budgetTurns && call.Side != "") {
			continue
		}
		if cur := snap.Values[s.counter] + held[s.counter]; cur+s.n > s.limit {
			h.flights.release(r, h.o.Now())
			return h.refuseRequest(call, s.budget, s.limit, cur, s.n)
		}
		ops = append(ops, state.CounterOp{Name: s.counter, Spend: s.spend})
	}
	for _, s := range steps {
		if s.limit > 0 && (s.budget != budgetTurns || call.Side == "") {
			h.flights.hold(r, s.counter, s.n)
			*s.taken = s.n
		}
	}
	h.pending.put(pendingID(key, call.RequestID), r)
	if len(ops) > 0 {
		ops[0].Landed = func(v int64) { h.flights.landed(r, v, h.o.Now()) }
		call.Defer(func(s *state.Session) { s.StageCounters(ops...) })
	}
	return nil
}

// replyStaged is OnReply in staged counting: the streak and the tool caps
// are decided from snap, this turn's earlier calls and what is in flight;
// the calls' changes are staged for the turn's save (d.Effects).
func (h *Hook) replyStaged(call *hooks.Call, key state.Key, reply *conv.Reply, snap *state.CounterSnapshot) hooks.ReplyDecision {
	var d hooks.ReplyDecision
	id := pendingID(key, call.RequestID)
	r := h.pending.peek(id)
	if r == nil || !r.staged {
		r = &reservation{key: key, at: h.o.Now(), staged: true, base: call.Session.Version}
		h.flights.open(r)
		h.pending.put(id, r)
	}
	var ops []state.CounterOp
	for _, c := range reply.ToolCalls {
		if h.owned[c.Name] {
			continue
		}
		if lim := h.o.Limits.IdenticalCalls; lim > 0 {
			sig := callSignature(c)
			ops = append(ops, state.CounterOp{Name: counterStreak, Sig: sig})
			switch {
			case r.streakN > 0 && r.streakSig == sig:
				r.streakN++
			case r.streakN > 0:
				r.streakN = 1
			case snap.Sigs[counterStreak] == sig:
				r.streakN = snap.Values[counterStreak] + 1
			default:
				r.streakN = 1
			}
			r.streakSig = sig
			if r.streakN > lim {
				h.reached(call, budgetIdentical, lim, r.streakN-1, c)
				d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Refuse, Result: loopReason(r.streakN - 1), Rule: Name})
				continue
			}
		}
		limit := toolLimit(h.o.Tools, c.Name)
		if limit <= 0 {
			continue
		}
		counter := callsPrefix + c.Name
		if cur := snap.Values[counter] + h.flights.sum(key, r.base)[counter]; cur+1 > limit {
			h.reached(call, budgetToolCalls, limit, cur, c)
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Refuse, Result: toolReason(c.Name, limit, cur), Rule: Name})
			continue
		}
		h.flights.hold(r, counter, 1)
		ops = append(ops, state.CounterOp{Name: counter, N: 1})
		if c.ID != "" {
			if r.counted == nil {
				r.counted = map[string]string{}
			}
			r.counted[c.ID] = c.Name
		}
	}
	if len(ops) > 0 {
		ops[0].Landed = func(v int64) { h.flights.landed(r, v, h.o.Now()) }
		d.Effects = append(d.Effects, func(s *state.Session) { s.StageCounters(ops...) })
	}
	return d
}

// outcomeStaged is OnOutcome in staged counting: the save already added
// the turn's spend; what r still holds is released (its save failed), and
// the calls counted that never reached the agent are given back (a round
// trip, after the reply was written; rare: another hook refused or claimed
// the call, or it was dropped or undelivered).
func (h *Hook) outcomeStaged(call *hooks.Call, key state.Key, r *reservation, out *conv.TurnOutcome) {
	h.flights.release(r, h.o.Now())
	to := key
	if s := call.Saved; s != nil && s.ID != "" && (s.ID != key.Session || s.Tenant != key.Tenant) {
		to = state.Key{Tenant: s.Tenant, Session: s.ID}
	}
	for _, o := range out.Calls {
		tool, counted := r.counted[o.Call.ID]
		if !counted || o.Fate == conv.FateDelivered || (o.Fate == conv.FateRefused && o.Hook == Name) {
			continue
		}
		if call.Saved == nil {
			continue // not saved: never added
		}
		if _, err := h.o.Counters.Add(storeContext(), to, callsPrefix+tool, -1); err != nil {
			h.failed(call, "give back a call", err)
		}
	}
}
