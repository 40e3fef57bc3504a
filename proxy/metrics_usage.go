package proxy

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

var (
	_ turn.UsageMetrics  = (*Metrics)(nil)
	_ turn.PrefixMetrics = (*Metrics)(nil)
)

// Model label values: the first maxModelLabels distinct model names keep
// their name, later ones (and names longer than maxModelLabelLen) count as
// otherModel, so agents that send arbitrary model names cannot grow the
// series without bound; a reply without a model counts as unknownModel.
const (
	maxModelLabels   = 64
	maxModelLabelLen = 128
	otherModel       = "other"
	unknownModel     = "unknown"
)

// usageCounters are shepherd_tokens_total{route,model,kind} and
// shepherd_cost_usd_total{route,model}.
type usageCounters struct {
	tokens *prometheus.CounterVec
	cost   *prometheus.CounterVec
	models modelLabels
}

func newUsageCounters(r prometheus.Registerer) *usageCounters {
	u := &usageCounters{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_tokens_total",
			Help: "Tokens of the model replies shepherd served, by route, model and kind: input (not read from or written to the prompt cache), output, cache_read, cache_write. Follow-ups, continuations and side requests included; model is \"other\" past the first 64 distinct names.",
		}, []string{"route", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_cost_usd_total",
			Help: "List-price cost in US dollars of those tokens (pricing table; 0 for a model without a price), by route and model.",
		}, []string{"route", "model"}),
	}
	r.MustRegister(u.tokens, u.cost)
	return u
}

// Usage implements turn.UsageMetrics: it counts one turn's tokens and cost.
func (m *Metrics) Usage(route, model string, u conv.Usage, costUSD float64) {
	c := m.usage
	label := c.models.label(model)
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_read", u.CacheReadTokens}, {"cache_write", u.CacheWriteTokens}} {
		if k.n > 0 {
			c.tokens.WithLabelValues(route, label, k.kind).Add(float64(k.n))
		}
	}
	if costUSD > 0 {
		c.cost.WithLabelValues(route, label).Add(costUSD)
	}
}

// modelLabels bounds the model label's values (see maxModelLabels).
type modelLabels struct {
	mu   sync.RWMutex
	seen map[string]struct{}
}

func (l *modelLabels) label(model string) string {
	switch {
	case model == "":
		return unknownModel
	case len(model) > maxModelLabelLen:
		return otherModel
	}
	l.mu.RLock()
	_, ok := l.seen[model]
	full := len(l.seen) >= maxModelLabels
	l.mu.RUnlock()
	if ok {
		return model
	}
	if full {
		return otherModel
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[model]; ok {
		return model
	}
	if len(l.seen) >= maxModelLabels {
		return otherModel
	}
	if l.seen == nil {
		l.seen = make(map[string]struct{}, maxModelLabels)
	}
	l.seen[model] = struct{}{}
	return model
}
