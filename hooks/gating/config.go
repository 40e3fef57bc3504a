// Package gating decides, for chat-style apps, whether a message follows up the conversation or starts a new topic, and for a new topic sends only the system prompt and the new message.
package gating

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-proxy/shepherd/hooks"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "gating"

// maxShortWords bounds gating.short_words: a longer "short" message would
// make almost every message a follow-up.
const maxShortWords = 100

// Config is the gating section of the configuration (keys gating.*). The feature
// is opt-in: off by default.
type Config struct {
	hooks.Scope `mapstructure:",squash"`
	// ShortWords: key gating.short_words; a message of at most this many
	// words follows up (rule short_message); 0 turns the rule off.
	// Default 6.
	ShortWords int `mapstructure:"short_words"`
	// NewTopicPhrases: key gating.new_topic_phrases; a message containing
	// one (case-insensitive, whole words) starts a new topic. Default
	// DefaultNewTopicPhrases.
	NewTopicPhrases []string `mapstructure:"new_topic_phrases"`
	// FollowUpPhrases: key gating.follow_up_phrases; a message containing
	// one follows up. Default DefaultFollowUpPhrases.
	FollowUpPhrases []string `mapstructure:"follow_up_phrases"`
}

var _ hooks.Section = (*Config)(nil)

// DefaultNewTopicPhrases are the phrases that announce a new topic.
func DefaultNewTopicPhrases() []string {
	return []string{"new question", "another question", "different question", "new topic", "different topic",
		"unrelated", "switching topics", "change of topic", "changing the subject", "on another note"}
}

// DefaultFollowUpPhrases are the phrases that refer to the conversation so
// far.
func DefaultFollowUpPhrases() []string {
	return []string{"as you said", "you said", "you mentioned", "above", "earlier", "previous", "continue",
		"go on", "what about", "how about", "and also", "tell me more", "more details", "elaborate", "same one", "follow up"}
}

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{
		Scope:           hooks.Scope{Enabled: hooks.OptInOff},
		ShortWords:      6,
		NewTopicPhrases: DefaultNewTopicPhrases(),
		FollowUpPhrases: DefaultFollowUpPhrases(),
	}
}

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	c.Scope.Validate(Name, &p)
	if c.ShortWords < 0 || c.ShortWords > maxShortWords {
		p.Add(Name+".short_words", "%d is out of range: must be between 0 and %d", c.ShortWords, maxShortWords)
	}
	for key, list := range map[string][]string{"new_topic_phrases": c.NewTopicPhrases, "follow_up_phrases": c.FollowUpPhrases} {
		for i, ph := range list {
			if len(words(ph)) == 0 {
				p.Add(Name+"."+key, "entry %d (%q) has no words", i, ph)
			}
		}
	}
	return p
}

// OwnedTools implements hooks.Section: the feature owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook for the chains of the APIs
// in gating.apis, counting decisions in shepherd_gating_decisions_total.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if c.Off() {
		return nil, nil
	}
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shepherd_gating_decisions_total",
		Help: "History gating decisions, by decision (follow_up, new_topic) and the rule that decided (reason).",
	}, []string{"decision", "reason"})
	if err := env.Metrics.Register(decisions); err != nil {
		return nil, fmt.Errorf("gating: registering metrics: %w", err)
	}
	for reason, verdict := range reasonVerdicts {
		decisions.WithLabelValues(string(verdict), string(reason)) // every pair reads 0 until it happens
	}
	h := New(Options{
		Scope: c.Scope,
		Rules: Rules{ShortWords: c.ShortWords, NewTopicPhrases: c.NewTopicPhrases, FollowUpPhrases: c.FollowUpPhrases},
		OnDecision: func(d Decision) {
			decisions.WithLabelValues(string(d.Verdict), string(d.Reason)).Inc()
		},
		Events: env.Events,
		Log:    env.Log,
	})
	return c.Scope.Plugin(h), nil
}
