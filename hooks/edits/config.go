package edits

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
)

// Name is the feature's name: its configuration section and its hook's
// name in logs and metrics.
const Name = "edits"

// Defaults of the edits section.
const (
	DefaultJournalSize     = 10
	DefaultMaxContentBytes = 256 << 10
	// maxJournalSize bounds edits.journal_size (the store keeps at most
	// 1000 entries per session anyway).
	maxJournalSize = 1000
)

// Config is the edits section of the configuration (keys edits.*): file
// edits announced while they stream, and the per-session edit journal.
type Config struct {
	// Enabled: key edits.enabled; default true. The feature only observes:
	// it never changes a request or a reply.
	Enabled bool `mapstructure:"enabled"`
	// JournalSize: key edits.journal_size; the entries kept per session and
	// path, newest first out (FIFO); default 10, 1 to 1000.
	JournalSize int `mapstructure:"journal_size"`
	// MaxContentBytes: key edits.max_content_bytes; a file's before and
	// after content are journalled only up to this size (the entry then
	// says the content is unknown); default 262144, 0 keeps none.
	MaxContentBytes int `mapstructure:"max_content_bytes"`
	// Tools: key edits.tools; extra recognition rules for file-writing
	// tools beyond the built-in ones (recognize.ParseRules).
	Tools []string `mapstructure:"tools"`
	// Log: key edits.log; default true: edit.started and edit.finished are
	// logged at info, so the same events are visible without the console.
	Log bool `mapstructure:"log"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{Enabled: true, JournalSize: DefaultJournalSize, MaxContentBytes: DefaultMaxContentBytes, Log: true}
}

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	if c.JournalSize < 1 || c.JournalSize > maxJournalSize {
		p.Add("edits.journal_size", "%d is out of range: must be between 1 and %d", c.JournalSize, maxJournalSize)
	}
	if c.MaxContentBytes < 0 {
		p.Add("edits.max_content_bytes", "%d must not be negative", c.MaxContentBytes)
	}
	if _, err := c.rules(); err != nil {
		p.Add("edits.tools", "%v", err)
	}
	return p
}

// rules are the recognition rules: the built-in ones, then edits.tools.
func (c *Config) rules() ([]recognize.Rule, error) {
	extra, err := recognize.ParseRules(c.Tools)
	if err != nil {
		return nil, err
	}
	return append(recognize.Builtin(), extra...), nil
}

// OwnedTools implements hooks.Section: none (edits only observes calls;
// other features decide them as usual).
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook for every chain, with its
// metrics and the journal writer's queue. Off, it provisions nothing.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if !c.Enabled {
		return nil, nil
	}
	rules, err := c.rules()
	if err != nil {
		return nil, fmt.Errorf("edits.tools: %w", err)
	}
	m := newMetrics()
	if err := m.register(env.Metrics); err != nil {
		return nil, fmt.Errorf("edits: registering metrics: %w", err)
	}
	h := New(Options{
		Table:           recognize.NewTable(rules),
		Journal:         env.Journal,
		JournalSize:     c.JournalSize,
		MaxContentBytes: c.MaxContentBytes,
		Events:          env.Events,
		Log:             env.Log,
		LogEdits:        c.Log,
		Metrics:         m,
	})
	return plugin{h}, nil
}

// plugin gives the same hook to every chain.
type plugin struct{ h *Hook }

func (p plugin) Hook(hooks.API) (hooks.Hook, error) { return p.h, nil }

// Close flushes the journal writer's queue.
func (p plugin) Close() error { return p.h.Close() }
