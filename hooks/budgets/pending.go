package budgets

import (
	"sync"
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

// holdFor is how long a request's reservation waits for its turn's
// outcome. A request whose reply never reaches the reply hooks (the
// upstream answered with an error, the client left, a later hook answered
// the request) gets no outcome; its estimate is given back after this
// long, so failed requests do not use up the budget. An outcome that comes
// later finds no reservation and adds its whole spend, so the counters stay
// right either way.
const holdFor = 10 * time.Minute

// reservation is what a request took from its session's counters, to be
// settled by its turn's outcome (actual spend minus reserved).
type reservation struct {
	key    state.Key
	turns  int64 // 1 when a turn was reserved
	tokens int64 // the token estimate reserved
	cost   int64 // micro-dollars reserved
	// counted are the tool calls whose call budget the reply side took,
	// by call id: their tool. One not delivered is given back.
	counted map[string]string
	at      time.Time
	// staged: the turn's save carries the counter changes (staged.go);
	// base is then the session version the request read, held what it
	// holds in flight (guarded by flights.mu), streakSig and streakN the
	// streak as this turn's calls left it.
	staged    bool
	base      int64 // the session version the request read
	held      map[string]int64
	streakSig string
	streakN   int64
}

// pending are the reservations of requests in flight on this replica, by
// request: the same request id and session (an agent may send its own
// X-Request-Id) queue in arrival order.
type pending struct {
	mu    sync.Mutex
	by    map[string][]*reservation
	swept time.Time
}

func pendingID(key state.Key, requestID string) string {
	return key.Tenant + "\x00" + key.Session + "\x00" + requestID
}

// put records r for the request id.
func (p *pending) put(id string, r *reservation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string][]*reservation{}
	}
	p.by[id] = append(p.by[id], r)
}

// peek returns the oldest reservation of id, nil when none.
func (p *pending) peek(id string) *reservation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.by[id]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// take removes and returns the oldest reservation of id, nil when none.
func (p *pending) take(id string) *reservation {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.by[id]
	if len(q) == 0 {
		return nil
	}
	r := q[0]
	if len(q) == 1 {
		delete(p.by, id)
	} else {
		p.by[id] = q[1:]
	}
	return r
}

// expired removes and returns the reservations older than holdFor, at most
// once a minute (the caller gives them back); swept says it looked.
func (p *pending) expired(now time.Time) (out []*reservation, swept bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.swept) < time.Minute {
		return nil, false
	}
	p.swept = now
	for id, q := range p.by {
		keep := q[:0]
		for _, r := range q {
			if now.Sub(r.at) >= holdFor {
				out = append(out, r)
			} else {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			delete(p.by, id)
		} else {
			p.by[id] = keep
		}
	}
	return out, true
}
