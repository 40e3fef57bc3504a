// Package compaction compacts old tool results when a request grows past a budget, in epochs whose compacted bytes are kept in the session and replayed byte for byte, so the prompt cache's prefix changes once per epoch.
package compaction

import "github.com/shepherd-proxy/shepherd/hooks"

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "compaction"

// Config is the compaction section of the configuration (keys compaction.*). The feature
// is opt-in: off by default.
type Config struct {
	hooks.Scope `mapstructure:",squash"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() { *c = Config{Scope: hooks.Scope{Enabled: hooks.OptInOff}} }

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	c.Scope.Validate(Name, &p)
	return p
}

// OwnedTools implements hooks.Section: the feature owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section.
func (c *Config) Provision(hooks.Env) (hooks.Plugin, error) {
	return nil, nil
}
