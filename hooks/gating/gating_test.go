package gating

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

func msg(role conv.Role, text string) conv.Message {
	return conv.Message{Role: role, Blocks: []conv.Block{{Kind: conv.BlockText, Text: text}}}
}

func toolResult() conv.Message {
	return conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "c1", Text: "42"}}}
}

var (
	q1     = msg(conv.RoleUser, "What is the capital of France?")
	a1     = msg(conv.RoleAssistant, "Paris.")
	q2     = msg(conv.RoleUser, "How do I bake a loaf of sourdough bread at home?")
	a2     = msg(conv.RoleAssistant, "Mix flour, water and starter; bake at 250 C.")
	q3     = msg(conv.RoleUser, "Does it need a long time to rise?")
	system = msg(conv.RoleSystem, "Be brief.")
)

type harness struct {
	h    *Hook
	evs  *events.Recorder
	seen []Decision
}

func newHarness(enabled hooks.OptIn) *harness {
	x := &harness{evs: &events.Recorder{}}
	x.h = New(Options{Scope: hooks.Scope{Enabled: enabled}, Rules: defaultRules(), Events: x.evs,
		OnDecision: func(d Decision) { x.seen = append(x.seen, d) }, Now: func() time.Time { return time.Unix(1, 0) }})
	return x
}

// run runs the hook on msgs in sess and applies what it deferred to sess.
func (x *harness) run(t *testing.T, sess *state.Session, call *hooks.Call, msgs ...conv.Message) conv.RequestEdits {
	t.Helper()
	if call == nil {
		call = &hooks.Call{SessionID: "s", Tenant: "t"}
	}
	call.Session = sess
	edits, resp, err := x.h.OnRequest(context.Background(), call, &conv.Request{Messages: msgs})
	require.NoError(t, err)
	require.Nil(t, resp)
	for _, fx := range call.TakeDeferred() {
		fx(sess)
	}
	return edits
}

func (x *harness) lastEvent(t *testing.T) map[string]any {
	t.Helper()
	require.NotEmpty(t, x.evs.All())
	ev := x.evs.All()[len(x.evs.All())-1]
	require.Equal(t, events.HistoryGated, ev.Type)
	require.Equal(t, "s", ev.Session)
	return ev.Data
}

func start(t *testing.T, sess *state.Session) string {
	t.Helper()
	st, err := Of(sess)
	require.NoError(t, err)
	return st.TopicStart()
}

// A chat across two topics: the first message starts a topic (nothing to
// drop), an unrelated one starts another (the old one dropped, its start
// saved), a pronoun follow-up carries the history from that start.
func TestHookConversation(t *testing.T) {
	x := newHarness(hooks.OptInOn)
	sess := &state.Session{ID: "s"}

	e := x.run(t, sess, nil, system, q1)
	require.Equal(t, 1, e.DropBefore, "nothing but the system message before it")
	require.Equal(t, map[string]any{"decision": "new_topic", "reason": "no_history", "dropped": 0}, x.lastEvent(t))
	require.Equal(t, conv.Anchors([]conv.Message{system, q1})[1], start(t, sess))

	conv2 := []conv.Message{system, q1, a1, q2}
	e = x.run(t, sess, nil, conv2...)
	require.Equal(t, conv.RequestEdits{DropBefore: 3}, e)
	require.Equal(t, map[string]any{"decision": "new_topic", "reason": "no_link", "dropped": 2}, x.lastEvent(t))
	require.Equal(t, conv.Anchors(conv2)[3], start(t, sess))

	e = x.run(t, sess, nil, system, q1, a1, q2, a2, q3)
	require.Equal(t, conv.RequestEdits{DropBefore: 3}, e, "the follow-up keeps the topic from its start")
	require.Equal(t, map[string]any{"decision": "follow_up", "reason": "leading_pronoun", "dropped": 2}, x.lastEvent(t))
	require.Equal(t, conv.Anchors(conv2)[3], start(t, sess), "a follow-up does not move the start")

	// The tool loop of the follow-up: always a follow-up, same start.
	e = x.run(t, sess, nil, system, q1, a1, q2, a2, q3, msg(conv.RoleAssistant, "Checking."), toolResult())
	require.Equal(t, 3, e.DropBefore)
	require.Equal(t, "tool_loop", x.lastEvent(t)["reason"])

	require.Equal(t, []Decision{{NewTopic, ReasonNoHistory}, {NewTopic, ReasonNoLink}, {FollowUp, ReasonLeadingPronoun}, {FollowUp, ReasonToolLoop}}, x.seen)
}

// A follow-up whose topic start the conversation no longer has (edited
// history, another conversation, no slot) keeps everything.
func TestHookFollowUpWithoutStart(t *testing.T) {
	x := newHarness(hooks.OptInOn)
	sess := &state.Session{ID: "s"}
	require.Zero(t, x.run(t, sess, nil, q1, a1, q3).DropBefore)
	require.Empty(t, start(t, sess))

	sess.SetSlot(Name, &State{Start: "gone"})
	require.Zero(t, x.run(t, sess, nil, q1, a1, q3).DropBefore)
	require.Equal(t, "gone", start(t, sess))
}

// A slot this build cannot read: follow-ups keep everything, a new topic
// still drops but leaves the slot as it was.
func TestHookUnreadableSlot(t *testing.T) {
	x := newHarness(hooks.OptInOn)
	sess := &state.Session{ID: "s", Slots: state.Slots{Name: &state.RawSlot{V: 99, Data: []byte(`{}`)}}}
	require.Zero(t, x.run(t, sess, nil, q1, a1, q3).DropBefore)
	require.Equal(t, 2, x.run(t, sess, nil, q1, a1, q2).DropBefore)
	_, err := Of(sess)
	require.Error(t, err)
}

// Requests the hook leaves alone: off, header without the feature named,
// side requests, a conversation ending in an assistant prefill or empty.
func TestHookLeavesAlone(t *testing.T) {
	for name, tc := range map[string]struct {
		enabled hooks.OptIn
		call    *hooks.Call
		msgs    []conv.Message
	}{
		"off":            {hooks.OptInOff, nil, []conv.Message{q1, a1, q2}},
		"header, absent": {hooks.OptInHeader, &hooks.Call{SessionID: "s", Features: []string{"format"}}, []conv.Message{q1, a1, q2}},
		"side request":   {hooks.OptInOn, &hooks.Call{SessionID: "s", Side: "no_tools"}, []conv.Message{q1, a1, q2}},
		"prefill":        {hooks.OptInOn, nil, []conv.Message{q1, a1, q2, a2}},
		"empty":          {hooks.OptInOn, nil, nil},
	} {
		t.Run(name, func(t *testing.T) {
			x := newHarness(tc.enabled)
			sess := &state.Session{ID: "s"}
			require.Equal(t, conv.RequestEdits{}, x.run(t, sess, tc.call, tc.msgs...))
			require.Empty(t, x.evs.All())
			require.Empty(t, x.seen)
			require.Nil(t, sess.Slots)
		})
	}
	x := newHarness(hooks.OptInHeader)
	e := x.run(t, &state.Session{ID: "s"}, &hooks.Call{SessionID: "s", Features: []string{"gating"}}, q1, a1, q2)
	require.Equal(t, 2, e.DropBefore, "header naming the feature")
}

func TestSlotRoundTrip(t *testing.T) {
	sess := &state.Session{Slots: state.Slots{Name: &state.RawSlot{V: 1, Data: []byte(`{"start":"abc"}`)}}}
	st, err := Of(sess)
	require.NoError(t, err)
	require.Equal(t, "abc", st.TopicStart())
	c := st.CloneSlot().(*State)
	c.Start = "x"
	require.Equal(t, "abc", st.Start)
	var nilState *State
	require.Empty(t, nilState.TopicStart())
}

func TestConfig(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.Empty(t, c.Validate())
	require.True(t, c.Off())
	p, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	require.Nil(t, p, "off by default: nothing provisioned")

	c.Enabled, c.APIs, c.ShortWords = hooks.OptInOn, []string{"openai_chat"}, 3
	reg := prometheus.NewRegistry()
	p, err = c.Provision(hooks.Env{Metrics: reg, Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	h, err := p.Hook(hooks.API{Key: "openai_chat"})
	require.NoError(t, err)
	require.NotNil(t, h)
	none, err := p.Hook(hooks.API{Key: "anthropic"})
	require.NoError(t, err)
	require.Nil(t, none)
	_, _, err = h.(*Hook).OnRequest(context.Background(), &hooks.Call{Session: &state.Session{}}, &conv.Request{Messages: []conv.Message{q1, a1, q3}})
	require.NoError(t, err)
	require.Equal(t, 1.0, counterValue(t, reg, "follow_up", "leading_pronoun"))

	bad := c
	bad.ShortWords, bad.NewTopicPhrases, bad.FollowUpPhrases, bad.Enabled = -1, []string{"ok", " ?! "}, []string{""}, "sometimes"
	var keys []string
	for _, pr := range bad.Validate() {
		keys = append(keys, pr.Key)
	}
	require.ElementsMatch(t, []string{"gating.enabled", "gating.short_words", "gating.new_topic_phrases", "gating.follow_up_phrases"}, keys)
}

// counterValue reads shepherd_gating_decisions_total{decision,reason} in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, decision, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "shepherd_gating_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["decision"] == decision && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no counter for %s/%s", decision, reason)
	return 0
}
