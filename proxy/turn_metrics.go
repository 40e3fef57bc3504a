package proxy

import (
	"time"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
)

var _ turn.Metrics = (*Metrics)(nil)

// HookFailed implements turn.Metrics.
func (m *Metrics) HookFailed(hook string) { m.hookErrors.WithLabelValues(hook).Inc() }

// LedgerReplayed implements turn.Metrics.
func (m *Metrics) LedgerReplayed(applied, missed, unreadable int) {
	m.ledger.WithLabelValues("applied").Add(float64(applied))
	m.ledger.WithLabelValues("missed").Add(float64(missed))
	if unreadable > 0 {
		m.ledger.WithLabelValues("unreadable").Add(float64(unreadable))
	}
}

var _ turn.SpliceMetrics = (*Metrics)(nil)

// UserTextEdits implements turn.SpliceMetrics.
func (m *Metrics) UserTextEdits(taken, made int) {
	m.userTextEdits.WithLabelValues("memo").Add(float64(taken))
	m.userTextEdits.WithLabelValues("made").Add(float64(made))
}

// CallsAnswered implements turn.Metrics.
func (m *Metrics) CallsAnswered(n int) { m.answered.Add(float64(n)) }

// FollowUp implements turn.Metrics.
func (m *Metrics) FollowUp(route string) { m.followups.WithLabelValues(route).Inc() }

// Continuation implements turn.Metrics.
func (m *Metrics) Continuation(route string) { m.recoveryAttempts.WithLabelValues(route).Inc() }

// Truncated implements turn.Metrics.
func (m *Metrics) Truncated(route, stop string) { m.truncations.WithLabelValues(route, stop).Inc() }

// Recovery implements turn.Metrics.
func (m *Metrics) Recovery(route, result string, added time.Duration) {
	m.recoveries.WithLabelValues(route, result).Inc()
	m.recoveryAdded.WithLabelValues(route).Observe(added.Seconds())
}
