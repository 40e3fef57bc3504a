package turn

import (
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// UsageMetrics is what a Metrics may also implement to count each turn's
// tokens and cost (the proxy's Prometheus metrics do): model is the model
// that answered, costUSD its list-price cost (0 when unpriced).
type UsageMetrics interface {
	Usage(route, model string, u conv.Usage, costUSD float64)
}

// turnUsage is what one turn adds to its session: the tokens of every
// upstream reply of the turn (the agent's request, follow-ups and
// continuations each cost tokens), their cost, the model and the agent.
type turnUsage struct {
	usage  conv.Usage
	cost   float64
	priced bool // the model has a price (cost is 0 otherwise)
	model  string
	agent  string
	side   bool // a side request: its model is the session's only when it has none
}

// usage returns the turn's usage and reports it to the metrics, or nil when
// no reply was read (nothing was spent that shepherd saw). save calls it
// once per turn. Side requests count too, their tokens cost money: save
// adds them to a session that exists (never creating one for them) and
// does not count them as requests of the session.
func (t *Turn) usage() *turnUsage {
	a := t.spent()
	if a == nil {
		return nil
	}
	if m, ok := t.e.metrics.(UsageMetrics); ok {
		m.Usage(t.call.Route, a.model, a.usage, a.cost)
	}
	return a
}

// spent computes what the turn spent so far: the tokens summed over its
// replies, the model that answered (the request's when no reply names
// one), and their list-price cost. It has no side effect (the live feed's
// request.finished may read it too); nil when no reply was read.
func (t *Turn) spent() *turnUsage {
	if t.tally == nil || !t.tally.ran {
		return nil
	}
	a := &turnUsage{usage: t.tally.usage, model: t.tally.model, agent: t.call.Agent, side: t.call.Side != ""}
	if a.model == "" && t.view != nil {
		a.model = t.view.Model
	}
	a.cost, a.priced = t.e.prices.Cost(a.model, a.usage)
	return a
}

// Cost is the list-price cost of the turn's replies, as saved with the
// session (the model that answered, priced once per turn), and whether
// that model has a price. The proxy's request.finished reads it.
func (t *Turn) Cost() (usd float64, priced bool) {
	if a := t.spent(); a != nil {
		return a.cost, a.priced
	}
	return 0, false
}

// addTo adds the turn's usage to s (inside the store's atomic update: no
// side effect but on s). A nil turnUsage adds nothing.
func (a *turnUsage) addTo(s *state.Session) {
	if a == nil {
		return
	}
	u := &s.Usage
	u.Turns++
	u.InputTokens += a.usage.InputTokens
	u.OutputTokens += a.usage.OutputTokens
	u.CacheReadTokens += a.usage.CacheReadTokens
	u.CacheWriteTokens += a.usage.CacheWriteTokens
	u.CostUSD += a.cost
	if a.model != "" && (!a.side || s.Model == "") {
		s.Model = a.model
	}
	if a.agent != "" {
		s.Agent = a.agent
	}
}
