package gating

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func defaultRules() Rules {
	var c Config
	c.SetDefaults()
	return Rules{ShortWords: c.ShortWords, NewTopicPhrases: c.NewTopicPhrases, FollowUpPhrases: c.FollowUpPhrases}
}

// Each rule, in order: the first that matches decides.
func TestDecide(t *testing.T) {
	const (
		prevUser  = "What is the capital of France?"
		prevReply = "Paris. It has been the capital since 987 and hosts the Louvre; see `paris_guide.md` or \"City of Light\"."
	)
	cases := []struct {
		name string
		in   Input
		want Decision
	}{
		{"tool results always follow up", Input{Message: "unrelated new question about something else entirely", ToolResults: true, HasHistory: true},
			Decision{FollowUp, ReasonToolLoop}},
		{"tool results with no history", Input{ToolResults: true}, Decision{FollowUp, ReasonToolLoop}},
		{"no history", Input{Message: "It is as you said."}, Decision{NewTopic, ReasonNoHistory}},
		{"new topic phrase", Input{Message: "New question: how do I bake bread?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{NewTopic, ReasonNewTopicPhrase}},
		{"new topic phrase wins over a pronoun", Input{Message: "This is unrelated, but how tall is Everest?", HasHistory: true},
			Decision{NewTopic, ReasonNewTopicPhrase}},
		{"new topic phrase, other case", Input{Message: "SWITCHING TOPICS — what's a good pasta recipe for dinner tonight?", HasHistory: true},
			Decision{NewTopic, ReasonNewTopicPhrase}},
		{"follow-up phrase", Input{Message: "Going back to what you mentioned about museums in general terms", HasHistory: true, PrevUser: prevUser},
			Decision{FollowUp, ReasonFollowUpPhrase}},
		{"follow-up phrase: what about", Input{Message: "What about the population of the whole metropolitan region today?", HasHistory: true},
			Decision{FollowUp, ReasonFollowUpPhrase}},
		{"a phrase matches whole words only", Input{Message: "Which aboveground pools hold the most water for summer swimming?", HasHistory: true},
			Decision{NewTopic, ReasonNoLink}},
		{"leading pronoun", Input{Message: "They say the winters there are harsh, is that really true for visitors?", HasHistory: true},
			Decision{FollowUp, ReasonLeadingPronoun}},
		{"pronoun after openers", Input{Message: "Why is that the case for most European capitals in history?", HasHistory: true},
			Decision{FollowUp, ReasonLeadingPronoun}},
		{"pronoun too late", Input{Message: "Please recommend a good book about sailing because I like it", HasHistory: true},
			Decision{NewTopic, ReasonNoLink}},
		{"shared number", Input{Message: "Which king ruled from 987 onwards and what did he build for the city?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{FollowUp, ReasonSharedItem}},
		{"shared name", Input{Message: "How much does a ticket for the Louvre cost for students these days?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{FollowUp, ReasonSharedItem}},
		{"shared identifier", Input{Message: "Could you rewrite paris_guide.md as a shorter list of bullet points please?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{FollowUp, ReasonSharedItem}},
		{"shared quoted string", Input{Message: "Where does the nickname \"city of light\" come from, historically speaking?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{FollowUp, ReasonSharedItem}},
		{"a rare word matches whole words only", Input{Message: "Which other countries have a capital that moved during their long history?", HasHistory: true, PrevUser: "Tell me about capitals", PrevReply: "Capitals often moved."},
			Decision{NewTopic, ReasonNoLink}},
		{"shared rare word counts", Input{Message: "Which European monarchies still exist today besides the Spanish one overall?", HasHistory: true, PrevUser: "List monarchies", PrevReply: "There are several monarchies."},
			Decision{FollowUp, ReasonSharedItem}},
		{"a capital opening a sentence is no name", Input{Message: "Paris aside, what is the best way to learn to knit quickly at home?", HasHistory: true, PrevUser: prevUser, PrevReply: "Paris."},
			Decision{NewTopic, ReasonNoLink}},
		{"short message", Input{Message: "And the weather?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{FollowUp, ReasonShortMessage}},
		{"short message boundary", Input{Message: "one two three four five six", HasHistory: true}, Decision{FollowUp, ReasonShortMessage}},
		{"seven words", Input{Message: "one two three four five six seven", HasHistory: true}, Decision{NewTopic, ReasonNoLink}},
		{"no link", Input{Message: "How do I bake a loaf of sourdough bread at home?", HasHistory: true, PrevUser: prevUser, PrevReply: prevReply},
			Decision{NewTopic, ReasonNoLink}},
	}
	r := defaultRules()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, r.Decide(c.in))
		})
	}
}

// The configurable parts: short_words 0 turns its rule off; the phrase
// lists are the configured ones.
func TestDecideConfigured(t *testing.T) {
	in := Input{Message: "Ok, go", HasHistory: true}
	require.Equal(t, Decision{FollowUp, ReasonShortMessage}, defaultRules().Decide(in))
	require.Equal(t, Decision{NewTopic, ReasonNoLink}, Rules{}.Decide(in))
	r := Rules{NewTopicPhrases: []string{"reset"}, FollowUpPhrases: []string{"new question"}}
	require.Equal(t, Decision{NewTopic, ReasonNewTopicPhrase}, r.Decide(Input{Message: "Reset, please, and then tell me a story", HasHistory: true}))
	require.Equal(t, Decision{FollowUp, ReasonFollowUpPhrase}, r.Decide(Input{Message: "New question about a distant planet in our galaxy", HasHistory: true}))
}

func TestIsItem(t *testing.T) {
	for tok, want := range map[string]bool{
		"42": true, "v1.2": true, "main.go": true, "user_id": true, "getUser": true, "NASA": true,
		"the": false, "because": false, "sourdough": true, "bread": false, "I": false,
	} {
		require.Equal(t, want, isItem(tok, false), tok)
	}
	require.True(t, isItem("Rome", false))
	require.False(t, isItem("Rome", true), "a capital opening a sentence")
	require.True(t, isItem("Louvre", true), "a rare word wherever it is")
}

// Any text: a decision with a known reason, the same each time.
func FuzzDecide(f *testing.F) {
	f.Add("Does it need a long time to rise?", "How do I bake bread?", "Mix flour `main.go` \"x\" 42.", true)
	f.Add("“quoted” Name_1 v1.2 ? ! ’", "", "", false)
	known := map[Reason]bool{ReasonToolLoop: true, ReasonNoHistory: true, ReasonNewTopicPhrase: true, ReasonFollowUpPhrase: true,
		ReasonLeadingPronoun: true, ReasonSharedItem: true, ReasonShortMessage: true, ReasonNoLink: true}
	r := defaultRules()
	f.Fuzz(func(t *testing.T, message, prevUser, prevReply string, history bool) {
		in := Input{Message: message, HasHistory: history, PrevUser: prevUser, PrevReply: prevReply}
		d := r.Decide(in)
		require.True(t, known[d.Reason], "%+v", d)
		require.Contains(t, []Verdict{FollowUp, NewTopic}, d.Verdict)
		require.Equal(t, d, r.Decide(in))
	})
}
