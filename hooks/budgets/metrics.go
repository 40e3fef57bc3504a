package budgets

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// The budget names: the budget label of shepherd_budget_refusals_total and
// the budget field of budget.reached.
const (
	budgetTurns     = "turns"
	budgetTokens    = "tokens"
	budgetCost      = "cost_usd"
	budgetToolCalls = "tool_calls"
	budgetIdentical = "identical_calls"
)

// metrics are the feature's collectors. A nil *metrics counts nothing.
type metrics struct {
	refusals *prometheus.CounterVec
	errors   prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_budget_refusals_total",
			Help: "Requests (HTTP 429) and tool calls refused by a session budget, by budget (turns, tokens, cost_usd, tool_calls, identical_calls).",
		}, []string{"budget"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_budget_errors_total",
			Help: "Budget counter reads and writes that failed (the request or call passed: fail-open).",
		}),
	}
	for _, b := range []string{budgetTurns, budgetTokens, budgetCost, budgetToolCalls, budgetIdentical} {
		m.refusals.WithLabelValues(b)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	return errors.Join(r.Register(m.refusals), r.Register(m.errors))
}

func (m *metrics) refused(budget string) {
	if m != nil {
		m.refusals.WithLabelValues(budget).Inc()
	}
}

func (m *metrics) failed() {
	if m != nil {
		m.errors.Inc()
	}
}
