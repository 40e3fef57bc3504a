package topics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-proxy/shepherd/hooks"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "topics"

// Config is the topics section of the configuration (keys topics.*).
type Config struct {
	// Enabled: key topics.enabled; default true. Off, requests and replies
	// pass through untouched.
	Enabled bool `mapstructure:"enabled"`
	// ToolName: key topics.tool_name; the tool offered to the model; default
	// create_new_topic.
	ToolName string `mapstructure:"tool_name"`
	// Placement: key topics.placement; where the per-turn "[Active Topic: …]"
	// reminder goes: last_user (default; the end of the newest user turn,
	// after every cache breakpoint) or system (for models without prompt
	// caching: it changes the cache prefix whenever the topic changes).
	Placement Placement `mapstructure:"placement"`
	// MaxFollowups: key topics.max_followups; deprecated alias of
	// turns.max_followups (the configuration loader maps it there with a
	// warning); -1, the default, means unset.
	MaxFollowups int `mapstructure:"max_followups"`
	// Guidance: key topics.guidance; the system-prompt guidance; "" uses the
	// built-in text.
	Guidance string `mapstructure:"guidance"`
	// Reminder: key topics.reminder; the per-turn reminder, {title} replaced
	// by the active topic; "" uses the built-in text.
	Reminder string `mapstructure:"reminder"`
	// NoTopicReminder: key topics.no_topic_reminder; the reminder before the
	// first chapter; "" uses the built-in text.
	NoTopicReminder string `mapstructure:"no_topic_reminder"`
	// MaxChapters: key topics.max_chapters; the most chapters a session
	// keeps (the oldest are dropped and counted); default 200.
	MaxChapters int `mapstructure:"max_chapters"`
	// MaxCalls: key topics.max_calls; the most tool-call notes a session
	// keeps over all its chapters (the oldest are dropped and counted);
	// default 1000.
	MaxCalls int `mapstructure:"max_calls"`
}

// maxBound is the largest topics.max_chapters and topics.max_calls.
const maxBound = 100_000

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{Enabled: true, ToolName: DefaultTopicTool, Placement: PlacementLastUser, MaxFollowups: -1,
		MaxChapters: DefaultMaxChapters, MaxCalls: DefaultMaxCalls}
}

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	switch c.Placement {
	case PlacementLastUser, PlacementSystem:
	default:
		p.Add("topics.placement", "%q is not one of last_user, system", c.Placement)
	}
	if !hooks.ToolName(c.ToolName) {
		p.Add("topics.tool_name", "%q is not a valid tool name (1-64 letters, digits, _ or -)", c.ToolName)
	}
	if c.MaxFollowups < -1 || c.MaxFollowups > 16 {
		p.Add("topics.max_followups", "%d is out of range: must be between 0 and 16", c.MaxFollowups)
	}
	if c.MaxChapters < 1 || c.MaxChapters > maxBound {
		p.Add("topics.max_chapters", "%d is out of range: must be between 1 and %d", c.MaxChapters, maxBound)
	}
	if c.MaxCalls < 1 || c.MaxCalls > maxBound {
		p.Add("topics.max_calls", "%d is out of range: must be between 1 and %d", c.MaxCalls, maxBound)
	}
	return p
}

// OwnedTools implements hooks.Section: create_new_topic (or its configured
// name) when topics is on.
func (c *Config) OwnedTools() []string {
	if !c.Enabled {
		return nil
	}
	return []string{c.ToolName}
}

// Provision implements hooks.Section: one hook for every chain, counting
// accepted topic changes in shepherd_topic_changes_total.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if !c.Enabled {
		return nil, nil
	}
	changes := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shepherd_topic_changes_total", Help: "create_new_topic calls accepted (new chapters opened).",
	})
	if err := env.Metrics.Register(changes); err != nil {
		return nil, fmt.Errorf("topics: registering metrics: %w", err)
	}
	return plugin{New(Options{
		ToolName: c.ToolName, Placement: c.Placement,
		Guidance: c.Guidance, Reminder: c.Reminder, NoTopicReminder: c.NoTopicReminder,
		Limits:        Limits{Chapters: c.MaxChapters, Calls: c.MaxCalls},
		OnTopicChange: changes.Inc,
		Events:        env.Events,
	})}, nil
}

// plugin gives the same hook to every chain.
type plugin struct{ h *Hook }

func (p plugin) Hook(hooks.API) (hooks.Hook, error) { return p.h, nil }
func (p plugin) Close() error                       { return nil }
