package proxy

import (
	"shepherd/config"
	"shepherd/hooks"
)

// BuildChain builds the hook chain of the features cfg enables, in their
// fixed order. The binary and the tests build chains only through it.
func BuildChain(cfg *config.Config) *hooks.Chain {
	var hs []hooks.Hook
	if t := cfg.Topics; t.Enabled {
		hs = append(hs, hooks.NewTopics(hooks.TopicsConfig{
			ToolName: t.ToolName, Placement: hooks.Placement(t.Placement),
			Guidance: t.Guidance, Reminder: t.Reminder, NoTopicReminder: t.NoTopicReminder,
		}))
	}
	return hooks.NewChain(hs...)
}
