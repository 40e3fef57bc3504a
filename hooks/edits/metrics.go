package edits

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the feature's collectors. A nil *metrics counts nothing.
type metrics struct {
	// edits counts journalled edits (and edits later marked failed) by
	// tool, operation and status.
	edits *prometheus.CounterVec
	// journalErrors counts journal writes that failed or timed out;
	// dropped counts jobs dropped because the writer's queue was full.
	journalErrors prometheus.Counter
	dropped       prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		edits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_edits_total",
			Help: "File edits journalled, by tool, operation and status (applied, refused; failed when a later tool result reported an error).",
		}, []string{"tool", "operation", "status"}),
		journalErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_edit_journal_errors_total",
			Help: "Edit journal reads and writes that failed or timed out (the entries were not kept).",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_edit_journal_dropped_total",
			Help: "Turns whose edits were not journalled because the journal writer's queue was full.",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return errors.Join(r.Register(m.edits), r.Register(m.journalErrors), r.Register(m.dropped))
}

func (m *metrics) edit(tool, op, status string, n int) {
	if m != nil && n > 0 {
		m.edits.WithLabelValues(tool, op, status).Add(float64(n))
	}
}

func (m *metrics) journalError() {
	if m != nil {
		m.journalErrors.Inc()
	}
}

func (m *metrics) drop() {
	if m != nil {
		m.dropped.Inc()
	}
}
