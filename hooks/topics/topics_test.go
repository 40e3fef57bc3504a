package topics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

var fixedNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// withState is a session holding st in its topics slot.
func withState(st *State) *state.Session {
	s := &state.Session{}
	s.SetSlot(Name, st)
	return s
}

// slotOf is the topics slot of s (an empty one when it has none).
func slotOf(t *testing.T, s *state.Session) *State {
	t.Helper()
	st, err := Of(s)
	require.NoError(t, err)
	if st == nil {
		return &State{}
	}
	return st
}

func newTestTopics(p Placement) *Hook {
	return New(Options{Placement: p, Now: func() time.Time { return fixedNow }})
}

func TestTopicsRequestInjection(t *testing.T) {
	h := newTestTopics("")
	call := &hooks.Call{Session: &state.Session{}}
	e, resp, err := h.OnRequest(context.Background(), call, &conv.Request{})
	require.NoError(t, err)
	require.Nil(t, resp)
	require.Len(t, e.AddTools, 1)
	require.Equal(t, "create_new_topic", e.AddTools[0].Name)
	require.JSONEq(t, `{"type":"object","properties":{"title":{"type":"string","description":"Short title of the new chapter, e.g. \"Implementing Fix\""}},"required":["title"]}`, string(e.AddTools[0].Parameters))
	require.Equal(t, []string{DefaultTopicGuidance}, e.AppendSystem)
	require.Equal(t, []string{DefaultNoTopicReminder}, e.AppendUserText)

	call.Session.SetSlot(Name, &State{Topic: "Implementing Fix"})
	e2, _, _ := h.OnRequest(context.Background(), call, &conv.Request{})
	require.Equal(t, e.AddTools, e2.AddTools, "static injections are identical on every request")
	require.Equal(t, e.AppendSystem, e2.AppendSystem)
	require.Equal(t, []string{"[Active Topic: Implementing Fix]\nIf the current active topic no longer describes your current phase of work, use create_new_topic to start a new chapter."}, e2.AppendUserText)
}

func TestTopicsSystemPlacement(t *testing.T) {
	h := newTestTopics(PlacementSystem)
	e, _, _ := h.OnRequest(context.Background(), &hooks.Call{Session: withState(&State{Topic: "Research"})}, &conv.Request{})
	require.Empty(t, e.AppendUserText)
	require.Equal(t, []string{DefaultTopicGuidance, h.Reminder("Research")}, e.AppendSystem)
}

func TestTopicsAgentDeclaresTool(t *testing.T) {
	h := newTestTopics("")
	req := &conv.Request{Tools: []conv.ToolDef{{Name: "Read"}, {Name: "create_new_topic"}}}
	call := &hooks.Call{Session: &state.Session{}, Request: req}
	e, _, _ := h.OnRequest(context.Background(), call, req)
	require.True(t, e.Empty(), "an agent that has the tool gets nothing injected")

	reply := &conv.Reply{ToolCalls: []conv.ToolCall{
		{Index: 0, ID: "a", Name: "Read", Args: []byte(`{"file_path":"x"}`)},
		{Index: 1, ID: "b", Name: "create_new_topic", Args: []byte(`{"title":"Research"}`)},
	}}
	d, err := h.OnReply(context.Background(), call, reply)
	require.NoError(t, err)
	require.Empty(t, d.Calls, "the agent runs its own tool")
	require.Equal(t, []int{1}, d.MoveFirst, "but the call still comes first")
	s := &state.Session{}
	for _, fx := range d.Effects {
		fx(s)
	}
	require.Equal(t, "Research", slotOf(t, s).Topic, "and the chapter is tracked")
}

func TestTopicsReplyClaimsAndRecords(t *testing.T) {
	h := newTestTopics("")
	call := &hooks.Call{Session: &state.Session{}, Request: &conv.Request{}}
	reply := &conv.Reply{ToolCalls: []conv.ToolCall{
		{Index: 0, ID: "r1", Name: "Read", Args: []byte(`{"file_path":"a.go"}`)},
		{Index: 1, ID: "t1", Name: "create_new_topic", Args: []byte(`{"title":"  Implementing Fix "}`)},
		{Index: 2, ID: "t2", Name: "create_new_topic", Args: []byte(`{"title":""}`)},
		{Index: 3, ID: "t3", Name: "create_new_topic", Args: []byte(`{"title":"Testing"}`)},
		{Index: 4, ID: "e1", Name: "Edit", Args: []byte(`{}`)},
	}}
	d, err := h.OnReply(context.Background(), call, reply)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, d.MoveFirst)
	require.Equal(t, []conv.CallDecision{
		{CallIndex: 1, Verdict: conv.Claim, Result: `Topic changed to: "Implementing Fix"`},
		{CallIndex: 2, Verdict: conv.Refuse, Result: `create_new_topic needs a non-empty "title" string argument.`},
		{CallIndex: 3, Verdict: conv.Claim, Result: `Topic changed to: "Testing"`},
	}, d.Calls)

	s := withState(&State{Topic: "Research", Chapters: []Chapter{{Title: "Research", StartedAt: fixedNow.Add(-time.Hour)}}})
	for _, fx := range d.Effects {
		fx(s)
	}
	require.Equal(t, "Testing", slotOf(t, s).Topic, "the last topic of the turn is active")
	require.Len(t, slotOf(t, s).Chapters, 3)
	require.Equal(t, "Implementing Fix", slotOf(t, s).Chapters[1].Title)
	require.Empty(t, slotOf(t, s).Chapters[1].Calls)
	require.Equal(t, []CallNote{{Name: "Read", ID: "r1", At: fixedNow}, {Name: "Edit", ID: "e1", At: fixedNow}}, slotOf(t, s).Chapters[2].Calls,
		"the turn's other calls run after the topic calls, so they belong to the new chapter")
}

func TestTopicsCallsBeforeAnyChapter(t *testing.T) {
	h := newTestTopics("")
	d, _ := h.OnReply(context.Background(), &hooks.Call{Session: &state.Session{}}, &conv.Reply{ToolCalls: []conv.ToolCall{{Index: 0, ID: "x", Name: "Bash"}}})
	require.Empty(t, d.Calls)
	require.Empty(t, d.MoveFirst)
	s := &state.Session{}
	for _, fx := range d.Effects {
		fx(s)
	}
	require.Equal(t, []Chapter{{StartedAt: fixedNow, Calls: []CallNote{{Name: "Bash", ID: "x", At: fixedNow}}}}, slotOf(t, s).Chapters)
	require.Empty(t, slotOf(t, s).Topic)
}

func TestTopicsTitleWithQuotes(t *testing.T) {
	require.Equal(t, `Topic changed to: "Fix "quoted" bug"`, TopicResult(`Fix "quoted" bug`))
}
