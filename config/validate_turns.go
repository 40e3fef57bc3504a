package config

import "fmt"

func (t *Turns) validate(p *problems) {
	if t.MaxFollowups < 0 || t.MaxFollowups > 16 {
		p.add("turns.max_followups", "%d is out of range: must be between 0 and 16", t.MaxFollowups)
	}
	if t.MaxRefusalRounds < 0 || t.MaxRefusalRounds > 16 {
		p.add("turns.max_refusal_rounds", "%d is out of range: must be between 0 and 16", t.MaxRefusalRounds)
	}
}

// mapDeprecated moves the values of deprecated keys to the keys that
// replace them, noting a warning for each (Deprecations):
// topics.max_followups sets turns.max_followups. Setting both to different
// values is an error: which one was meant cannot be told.
func (c *Config) mapDeprecated() error {
	if old := c.Topics.MaxFollowups; old != -1 {
		cur, def := c.Turns.MaxFollowups, Defaults().Turns.MaxFollowups
		if cur != def && cur != old {
			return fmt.Errorf("config: topics.max_followups (%d) is a deprecated alias of turns.max_followups (%d): set only turns.max_followups", old, cur)
		}
		c.Turns.MaxFollowups = old
		c.deprecations = append(c.deprecations,
			"topics.max_followups is deprecated: use turns.max_followups (it no longer bounds refusal rounds: turns.max_refusal_rounds does)")
	}
	return nil
}
