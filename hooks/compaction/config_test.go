package compaction

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		keys []string // the keys at fault
	}{
		{"defaults", func(*Config) {}, nil},
		{"on, one API", func(c *Config) { c.Enabled, c.APIs = hooks.OptInOn, []string{"gemini"} }, nil},
		{"a custom note", func(c *Config) { c.Note = "[cut; call {tool}]" }, nil},
		{"enabled not a switch", func(c *Config) { c.Enabled = "maybe" }, []string{"compaction.enabled"}},
		{"an unknown API", func(c *Config) { c.APIs = []string{"cohere"} }, []string{"compaction.apis"}},
		{"trigger 0", func(c *Config) { c.TriggerTokens = 0 }, []string{"compaction.trigger_tokens"}},
		{"items too small", func(c *Config) { c.ItemChars = 99 }, []string{"compaction.item_chars"}},
		{"negative total", func(c *Config) { c.TotalChars = -1 }, []string{"compaction.total_chars"}},
		{"total 0 is allowed (every result a stub)", func(c *Config) { c.TotalChars = 0 }, nil},
		{"negative keep_recent", func(c *Config) { c.KeepRecent = -1 }, []string{"compaction.keep_recent"}},
		{"a note that does not say how to get the result back", func(c *Config) { c.Note = "[cut]" }, []string{"compaction.note"}},
		{"a note too long", func(c *Config) { c.Note = "{tool}" + strings.Repeat("x", maxNoteChars) }, []string{"compaction.note"}},
		{"all at once", func(c *Config) { c.TriggerTokens, c.ItemChars, c.KeepRecent = -5, 0, -1 },
			[]string{"compaction.trigger_tokens", "compaction.item_chars", "compaction.keep_recent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			c.SetDefaults()
			tc.set(&c)
			var keys []string
			for _, p := range c.Validate() {
				keys = append(keys, p.Key)
			}
			require.Equal(t, tc.keys, keys)
		})
	}
}

func TestDefaults(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.True(t, c.Off())
	require.Equal(t, Config{Scope: hooks.Scope{Enabled: hooks.OptInOff}, TriggerTokens: 50000, ItemChars: 1500, TotalChars: 8000, KeepRecent: 4}, c)
}
