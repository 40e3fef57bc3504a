// Package prose watches tool-loop turns for prose the model wrote instead of, or before, its tool calls (metric, log, feed event) and may nudge it once to answer with tool calls only.
package prose

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-proxy/shepherd/hooks"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "prose"

// Nudge says whether prose detected in the tool loop earns the model a
// reminder.
type Nudge string

// Nudge values.
const (
	// NudgeOff: detection only (metric, log, event).
	NudgeOff Nudge = "off"
	// NudgeOnce: the first detection of a session queues one reminder,
	// sent on the session's next tool-loop request; never again after.
	NudgeOnce Nudge = "once"
)

// DefaultNudgeText is the reminder nudge once sends.
const DefaultNudgeText = "[Tool loop: answer with tool calls only; keep prose for the final answer.]"

// Config is the prose section of the configuration (keys prose.*). The feature
// is opt-in: off by default.
type Config struct {
	hooks.Scope `mapstructure:",squash"`
	// MinWords: key prose.min_words; a tool-loop reply is prose when its
	// text has more words than this (CountWords). Default 25.
	MinWords int `mapstructure:"min_words"`
	// Nudge: key prose.nudge; off (default) or once.
	Nudge Nudge `mapstructure:"nudge"`
	// NudgeText: key prose.nudge_text; the reminder nudge once appends to
	// the newest user turn. Default DefaultNudgeText.
	NudgeText string `mapstructure:"nudge_text"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{Scope: hooks.Scope{Enabled: hooks.OptInOff}, MinWords: 25, Nudge: NudgeOff, NudgeText: DefaultNudgeText}
}

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	c.Scope.Validate(Name, &p)
	if c.MinWords < 0 {
		p.Add(Name+".min_words", "%d must not be negative", c.MinWords)
	}
	switch c.Nudge {
	case NudgeOff, NudgeOnce:
	default:
		p.Add(Name+".nudge", "%q is not one of off, once", string(c.Nudge))
	}
	if strings.TrimSpace(c.NudgeText) == "" {
		p.Add(Name+".nudge_text", "must not be empty")
	}
	return p
}

// OwnedTools implements hooks.Section: the feature owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook, in the chains of the APIs
// the scope joins, counting detections in shepherd_prose_replies_total{kind}
// and reminders sent in shepherd_prose_nudges_total.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if c.Off() {
		return nil, nil
	}
	replies := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shepherd_prose_replies_total",
		Help: "Tool-loop replies with prose over prose.min_words, by kind (instead_of_tools, before_tools).",
	}, []string{"kind"})
	nudges := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shepherd_prose_nudges_total",
		Help: "Reminders to answer with tool calls only sent (prose.nudge once).",
	})
	for _, col := range []prometheus.Collector{replies, nudges} {
		if err := env.Metrics.Register(col); err != nil {
			return nil, fmt.Errorf("prose: registering metrics: %w", err)
		}
	}
	for _, k := range []Kind{InsteadOfTools, BeforeTools} {
		replies.WithLabelValues(string(k))
	}
	h := New(Options{
		Scope: c.Scope, MinWords: c.MinWords, Nudge: c.Nudge == NudgeOnce, NudgeText: c.NudgeText,
		Events: env.Events, Log: env.Log,
		OnDetected: func(k Kind) { replies.WithLabelValues(string(k)).Inc() },
		OnNudge:    nudges.Inc,
	})
	return c.Scope.Plugin(h), nil
}
