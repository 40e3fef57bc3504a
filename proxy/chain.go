package proxy

import (
	"shepherd/config"
	"shepherd/hooks"
)

// BuildChain builds the hook chain of the features cfg enables, in their
// fixed order, reporting their events to m. The binary and the tests build
// chains only through it.
func BuildChain(cfg *config.Config, m *Metrics) *hooks.Chain {
	var hs []hooks.Hook
	if t := cfg.Topics; t.Enabled {
		hs = append(hs, hooks.NewTopics(hooks.TopicsConfig{
			ToolName: t.ToolName, Placement: hooks.Placement(t.Placement),
			Guidance: t.Guidance, Reminder: t.Reminder, NoTopicReminder: t.NoTopicReminder,
			OnTopicChange: m.topicChanges.Inc,
		}))
	}
	return hooks.NewChain(hs...)
}
