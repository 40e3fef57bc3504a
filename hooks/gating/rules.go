package gating

import (
	"slices"
	"strings"
	"unicode"
)

// Verdict is what gating decided about a message.
type Verdict string

// Verdicts (the decision label of the metric and the event).
const (
	FollowUp Verdict = "follow_up"
	NewTopic Verdict = "new_topic"
)

// Reason names the rule that decided (the reason label and field).
type Reason string

// Reasons, in the order the rules are tried.
const (
	// ReasonToolLoop: the newest message carries tool results (the model
	// is in a tool loop): always a follow-up.
	ReasonToolLoop Reason = "tool_loop"
	// ReasonNoHistory: nothing before the message but the system prompt.
	ReasonNoHistory Reason = "no_history"
	// ReasonNewTopicPhrase: the message names a new topic ("new question").
	ReasonNewTopicPhrase Reason = "new_topic_phrase"
	// ReasonFollowUpPhrase: the message refers back ("as you said").
	ReasonFollowUpPhrase Reason = "follow_up_phrase"
	// ReasonLeadingPronoun: the message opens with a pronoun or
	// demonstrative ("it", "that", "those"), possibly after a question
	// word or auxiliary ("Is it", "Why does that").
	ReasonLeadingPronoun Reason = "leading_pronoun"
	// ReasonSharedItem: the message names an item of the previous
	// exchange: a number, an identifier, a quoted string, a capitalised
	// name or a rare word found in its user message or reply.
	ReasonSharedItem Reason = "shared_item"
	// ReasonShortMessage: the message has at most ShortWords words.
	ReasonShortMessage Reason = "short_message"
	// ReasonNoLink: none of the rules above tied it to the conversation.
	ReasonNoLink Reason = "no_link"
)

// Decision is one gating decision.
type Decision struct {
	Verdict Verdict
	Reason  Reason
}

// Rules are the configurable parts of the decision.
type Rules struct {
	// ShortWords: a message of at most this many words follows up (0: the
	// rule is off).
	ShortWords int
	// NewTopicPhrases and FollowUpPhrases are matched case-insensitively,
	// on whole words.
	NewTopicPhrases, FollowUpPhrases []string
}

// Input is what the decision reads of a request.
type Input struct {
	// Message is the text of the newest user message.
	Message string
	// ToolResults reports that the newest message carries tool results.
	ToolResults bool
	// HasHistory reports a message (other than system) before the newest.
	HasHistory bool
	// PrevUser and PrevReply are the text of the previous exchange: the
	// user message before the newest and the assistant text after it.
	PrevUser, PrevReply string
}

// Decide applies the rules, in order; the first that matches decides.
func (r Rules) Decide(in Input) Decision {
	msg := words(in.Message)
	switch {
	case in.ToolResults:
		return decided(ReasonToolLoop)
	case !in.HasHistory:
		return decided(ReasonNoHistory)
	case containsPhrase(msg, r.NewTopicPhrases):
		return decided(ReasonNewTopicPhrase)
	case containsPhrase(msg, r.FollowUpPhrases):
		return decided(ReasonFollowUpPhrase)
	case leadingPronoun(msg):
		return decided(ReasonLeadingPronoun)
	case sharesItem(in.Message, in.PrevUser+"\n"+in.PrevReply):
		return decided(ReasonSharedItem)
	case r.ShortWords > 0 && len(msg) <= r.ShortWords:
		return decided(ReasonShortMessage)
	}
	return decided(ReasonNoLink)
}

// words splits text into lower-cased words: runs of letters, digits and
// apostrophes (so "don't" is one word).
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	})
}

// containsPhrase reports whether one of phrases occurs in msg as a run of
// whole words.
func containsPhrase(msg []string, phrases []string) bool {
	for _, p := range phrases {
		pw := words(p)
		if len(pw) == 0 {
			continue
		}
		for i := 0; i+len(pw) <= len(msg); i++ {
			if slices.Equal(msg[i:i+len(pw)], pw) {
				return true
			}
		}
	}
	return false
}

// pronouns are the words that, leading a message, refer back.
var pronouns = set("it", "that", "this", "they", "those", "these", "he", "she", "them", "its", "it's", "that's", "they're", "there's")

// openers may come before a leading pronoun: question words, auxiliaries
// and conjunctions ("Is it", "Why does that", "And what about those").
var openers = set("is", "was", "are", "were", "does", "do", "did", "can", "could", "would", "will", "should", "has", "have",
	"how", "why", "what", "where", "when", "which", "who", "and", "but", "so", "then", "ok", "okay", "also", "explain", "make")

// leadingPronoun reports a pronoun among the first three words, preceded
// only by openers.
func leadingPronoun(msg []string) bool {
	for i, w := range msg {
		if i >= 3 {
			return false
		}
		if pronouns[w] {
			return true
		}
		if !openers[w] {
			return false
		}
	}
	return false
}

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// reasonVerdicts is the verdict each reason gives.
var reasonVerdicts = map[Reason]Verdict{
	ReasonToolLoop: FollowUp, ReasonNoHistory: NewTopic, ReasonNewTopicPhrase: NewTopic,
	ReasonFollowUpPhrase: FollowUp, ReasonLeadingPronoun: FollowUp, ReasonSharedItem: FollowUp,
	ReasonShortMessage: FollowUp, ReasonNoLink: NewTopic,
}

// decided is the decision reason gives.
func decided(r Reason) Decision { return Decision{reasonVerdicts[r], r} }
