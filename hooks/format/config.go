// Package format appends a format instruction (word and bullet budgets, most important first) to requests whose latest user message matches a rule, at the cache-safe reminder place.
package format

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-proxy/shepherd/hooks"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "format"

// Config is the format section of the configuration (keys format.*). The feature
// is opt-in: off by default.
type Config struct {
	hooks.Scope `mapstructure:",squash"`
	// Rules: key format.rules; ordered one-line rules (Rule), the first
	// whose match finds the prompt wins, e.g. "summary
	// match=(?i)\bsummar(y|ise|ize)\b words=120 bullets=5". Default none.
	// From the environment the list is comma-separated, so a rule set
	// there cannot hold a comma.
	Rules []string `mapstructure:"rules"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() { *c = Config{Scope: hooks.Scope{Enabled: hooks.OptInOff}} }

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	c.Scope.Validate(Name, &p)
	_, errs := ParseRules(c.Rules)
	for _, err := range errs {
		p.Add(Name+".rules", "%v", err)
	}
	return p
}

// OwnedTools implements hooks.Section: the feature owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook, in the chains of the APIs
// the scope joins, counting applied rules in
// shepherd_format_applied_total{rule}. Enabled without rules it
// provisions nothing: there is nothing to apply.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if c.Off() || len(c.Rules) == 0 {
		return nil, nil
	}
	rules, errs := ParseRules(c.Rules)
	if len(errs) > 0 {
		return nil, fmt.Errorf("format.rules: %w", errors.Join(errs...))
	}
	applied := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shepherd_format_applied_total",
		Help: "Format instructions appended to prompts, by format.rules rule.",
	}, []string{"rule"})
	if err := env.Metrics.Register(applied); err != nil {
		return nil, fmt.Errorf("format: registering metrics: %w", err)
	}
	for _, r := range rules {
		applied.WithLabelValues(r.Name)
	}
	h := New(Options{
		Scope: c.Scope, Rules: rules, Events: env.Events,
		OnApplied: func(rule string) { applied.WithLabelValues(rule).Inc() },
	})
	return c.Scope.Plugin(h), nil
}
