// Package prose watches tool-loop turns for prose the model wrote instead of, or before, its tool calls (metric, log, feed event) and may nudge it once to answer with tool calls only.
package prose

import "github.com/shepherd-proxy/shepherd/hooks"

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "prose"

// Config is the prose section of the configuration (keys prose.*). The feature
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
