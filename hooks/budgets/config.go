// Package budgets enforces per-session budgets and runaway caps (turns, tokens, cost, calls per tool, identical consecutive calls), exact across replicas through the state store's counters.
package budgets

import (
	"fmt"
	"math"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/state"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "budgets"

// Config is the budgets section of the configuration (keys budgets.*). The feature
// is opt-in: off by default. Every budget is per session; 0 (the default)
// leaves it unlimited.
type Config struct {
	hooks.Scope `mapstructure:",squash"`
	// MaxTurns: key budgets.max_turns; the agent's requests (turns) a
	// session may make; the next one gets HTTP 429. Side requests take no
	// turn.
	MaxTurns int64 `mapstructure:"max_turns"`
	// MaxTokens: key budgets.max_tokens; the tokens a session may spend:
	// input (cache reads and writes included) and output of every upstream
	// request, side requests, follow-ups and continuations included.
	MaxTokens int64 `mapstructure:"max_tokens"`
	// MaxCostUSD: key budgets.max_cost_usd; the list-price cost a session
	// may spend, in US dollars (pricing.*; an unpriced model costs 0).
	MaxCostUSD float64 `mapstructure:"max_cost_usd"`
	// ToolCalls: key budgets.tool_calls; "Tool=N" rules, first match wins
	// (Tool may be a glob, * matches every tool): each tool a rule matches
	// may be called at most N times per session, counted per tool; a call
	// past it is refused and the model told why.
	ToolCalls []string `mapstructure:"tool_calls"`
	// MaxIdenticalCalls: key budgets.max_identical_calls; how many times in
	// a row the model may make the same call (same tool, same argument
	// bytes) before the next repeat is refused as a loop; 0 is off.
	MaxIdenticalCalls int64 `mapstructure:"max_identical_calls"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{Scope: hooks.Scope{Enabled: hooks.OptInOff}}
}

// maxCostUSD bounds budgets.max_cost_usd so its micro-dollars fit the
// counters comfortably.
const maxCostUSD = 1e9

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	c.Scope.Validate(Name, &p)
	if c.MaxTurns < 0 {
		p.Add("budgets.max_turns", "%d must not be negative", c.MaxTurns)
	}
	if c.MaxTokens < 0 {
		p.Add("budgets.max_tokens", "%d must not be negative", c.MaxTokens)
	}
	if c.MaxCostUSD < 0 || c.MaxCostUSD > maxCostUSD || math.IsNaN(c.MaxCostUSD) {
		p.Add("budgets.max_cost_usd", "%v is out of range: must be between 0 and %g", c.MaxCostUSD, float64(maxCostUSD))
	}
	if _, err := ParseToolRules(c.ToolCalls); err != nil {
		p.Add("budgets.tool_calls", "%v", err)
	}
	if c.MaxIdenticalCalls < 0 {
		p.Add("budgets.max_identical_calls", "%d must not be negative", c.MaxIdenticalCalls)
	}
	return p
}

// OwnedTools implements hooks.Section: the feature owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook, in the chains of the APIs
// budgets.apis lists. Without the store's counters (Env.Counters nil) it
// says so once and provisions nothing: every request passes.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if c.Off() {
		return nil, nil
	}
	if env.Counters == nil {
		env.Log.Warn("budgets: the state store keeps no counters; budgets are not enforced")
		return nil, nil
	}
	rules, err := ParseToolRules(c.ToolCalls)
	if err != nil {
		return nil, fmt.Errorf("budgets.tool_calls: %w", err)
	}
	m := newMetrics()
	if err := m.register(env.Metrics); err != nil {
		return nil, fmt.Errorf("budgets: registering metrics: %w", err)
	}
	// A store that reads the counters with the session lets the turn's
	// load and save carry them: no round trip of the hook's own.
	p, staged := env.Counters.(state.CounterPrefetcher)
	if staged {
		p.PrefetchCounters()
	}
	h := New(Options{
		Staged: staged,
		Scope:  c.Scope,
		Limits: Limits{Turns: c.MaxTurns, Tokens: c.MaxTokens, CostMicros: micros(c.MaxCostUSD), IdenticalCalls: c.MaxIdenticalCalls},
		Tools:  rules, Owned: env.Owned,
		Counters: env.Counters, Log: env.Log, Events: env.Events, Metrics: m,
	})
	return c.Scope.Plugin(h), nil
}

// micros converts US dollars to whole micro-dollars (rounded).
func micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }
