// Package compaction compacts old tool results when a request grows past a budget, in epochs whose compacted bytes are kept in the session and replayed byte for byte, so the prompt cache's prefix changes once per epoch.
package compaction

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-proxy/shepherd/hooks"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "compaction"

// Defaults of the section's keys.
const (
	DefaultTriggerTokens = 50000
	DefaultItemChars     = 1500
	DefaultTotalChars    = 8000
	DefaultKeepRecent    = 4
	// DefaultNote is the note every compacted result carries; {kept},
	// {total} and {omitted} are character counts, {tool} the tool's name.
	DefaultNote = "[shepherd compacted this tool result: kept {kept} of {total} characters (its start and end), " +
		"{omitted} omitted. Call {tool} again to see it in full.]"
)

// Bounds the configuration is validated against.
const (
	minItemChars = 100
	maxNoteChars = 1000
)

// Config is the compaction section of the configuration (keys compaction.*). The feature
// is opt-in: off by default.
type Config struct {
	hooks.Scope `mapstructure:",squash"`
	// TriggerTokens: key compaction.trigger_tokens; a request whose
	// estimated size (characters / 4 of its texts, tool calls and tool
	// results, results already compacted at their compacted size) passes
	// this starts a new epoch. Default 50000.
	TriggerTokens int `mapstructure:"trigger_tokens"`
	// ItemChars: key compaction.item_chars; a compacted result keeps at
	// most this many characters (its start and end); results no longer
	// than this are never compacted. Default 1500, at least 100.
	ItemChars int `mapstructure:"item_chars"`
	// TotalChars: key compaction.total_chars; the characters one epoch
	// keeps across the results it compacts, the most relevant first; the
	// rest become a note alone. Default 8000.
	TotalChars int `mapstructure:"total_chars"`
	// KeepRecent: key compaction.keep_recent; the newest tool results
	// that are never compacted (nor those of the latest round, however
	// many). Default 4.
	KeepRecent int `mapstructure:"keep_recent"`
	// Note: key compaction.note; the note of a compacted result, with
	// {kept}, {total}, {omitted} and {tool}; "" uses DefaultNote.
	Note string `mapstructure:"note"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{
		Scope:         hooks.Scope{Enabled: hooks.OptInOff},
		TriggerTokens: DefaultTriggerTokens,
		ItemChars:     DefaultItemChars,
		TotalChars:    DefaultTotalChars,
		KeepRecent:    DefaultKeepRecent,
	}
}

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	c.Scope.Validate(Name, &p)
	if c.TriggerTokens <= 0 {
		p.Add(Name+".trigger_tokens", "%d must be positive", c.TriggerTokens)
	}
	if c.ItemChars < minItemChars {
		p.Add(Name+".item_chars", "%d is too small: at least %d", c.ItemChars, minItemChars)
	}
	if c.TotalChars < 0 {
		p.Add(Name+".total_chars", "%d must not be negative", c.TotalChars)
	}
	if c.KeepRecent < 0 {
		p.Add(Name+".keep_recent", "%d must not be negative", c.KeepRecent)
	}
	if n := len([]rune(c.Note)); n > maxNoteChars {
		p.Add(Name+".note", "%d characters is too long: at most %d", n, maxNoteChars)
	} else if c.Note != "" && !strings.Contains(c.Note, "{tool}") {
		p.Add(Name+".note", "must say how to get the result back: it lacks {tool}")
	}
	return p
}

// OwnedTools implements hooks.Section: the feature owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook, in the chains of the APIs
// the scope joins, counting epochs, results compacted and characters
// omitted.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if c.Scope.Off() {
		return nil, nil
	}
	m := newMetrics()
	for _, col := range []prometheus.Collector{m.epochs, m.results, m.omitted} {
		if err := env.Metrics.Register(col); err != nil {
			return nil, fmt.Errorf("compaction: registering metrics: %w", err)
		}
	}
	h := New(Options{
		Scope: c.Scope, TriggerTokens: c.TriggerTokens, ItemChars: c.ItemChars, TotalChars: c.TotalChars,
		KeepRecent: c.KeepRecent, Note: c.Note, Events: env.Events, Log: env.Log, Metrics: m,
	})
	return c.Scope.Plugin(h), nil
}

// metrics are the feature's counters.
type metrics struct {
	epochs, results, omitted prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		epochs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_compaction_epochs_total", Help: "Compaction epochs started (requests that compacted old tool results).",
		}),
		results: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_compaction_results_total", Help: "Tool results compacted.",
		}),
		omitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_compaction_chars_omitted_total", Help: "Characters of tool results left out by compaction.",
		}),
	}
}
