package prose

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

func text(s string) conv.Block { return conv.Block{Kind: conv.BlockText, Text: s} }
func call(id string) conv.Block {
	return conv.Block{Kind: conv.BlockToolCall, ToolCallID: id, ToolName: "Read", Args: []byte(`{}`)}
}
func result(id string) conv.Block {
	return conv.Block{Kind: conv.BlockToolResult, ToolCallID: id, Text: "file contents"}
}
func msg(role conv.Role, blocks ...conv.Block) conv.Message {
	return conv.Message{Role: role, Blocks: blocks}
}

// Conversations of each shape a tool-loop decision sees.
var (
	prompt         = []conv.Message{msg(conv.RoleUser, text("fix the test"))}
	loopAnthropic  = []conv.Message{msg(conv.RoleUser, text("fix the test")), msg(conv.RoleAssistant, call("c1")), msg(conv.RoleUser, result("c1"))}
	loopChat       = []conv.Message{msg(conv.RoleSystem, text("terse")), msg(conv.RoleUser, text("fix")), msg(conv.RoleAssistant, call("c1"), call("c2")), msg(conv.RoleTool, result("c1")), msg(conv.RoleTool, result("c2"))}
	loopWithText   = []conv.Message{msg(conv.RoleUser, text("fix")), msg(conv.RoleAssistant, call("c1")), msg(conv.RoleUser, result("c1"), text("<system-reminder>x</system-reminder>"))}
	loopThenPrompt = []conv.Message{msg(conv.RoleUser, text("fix")), msg(conv.RoleAssistant, call("c1")), msg(conv.RoleTool, result("c1")), msg(conv.RoleUser, text("and now?"))}
	nextPrompt     = []conv.Message{msg(conv.RoleUser, text("fix")), msg(conv.RoleAssistant, call("c1")), msg(conv.RoleUser, result("c1")), msg(conv.RoleAssistant, text("done")), msg(conv.RoleUser, text("thanks, now the docs"))}
	prefill        = []conv.Message{msg(conv.RoleUser, text("fix")), msg(conv.RoleAssistant, call("c1")), msg(conv.RoleUser, result("c1")), msg(conv.RoleAssistant, text("Sure"))}
)

func TestToolLoop(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []conv.Message
		want bool
	}{
		{"no messages", nil, false},
		{"a user prompt", prompt, false},
		{"anthropic tool results", loopAnthropic, true},
		{"chat tool messages", loopChat, true},
		{"results with the agent's reminder text", loopWithText, true},
		{"results then a user message, before any reply", loopThenPrompt, true},
		{"a prompt after a finished tool loop", nextPrompt, false},
		{"a prefill", prefill, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, (&conv.Request{Messages: tc.msgs}).ToolLoop())
		})
	}
	require.False(t, (*conv.Request)(nil).ToolLoop())
}

func words(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

func TestJudge(t *testing.T) {
	calls := []conv.ToolCall{{Index: 0, ID: "c", Name: "Read"}}
	for _, tc := range []struct {
		name     string
		reply    conv.Reply
		minWords int
		want     Detection
		ok       bool
	}{
		{"no text, a call", conv.Reply{ToolCalls: calls}, 25, Detection{}, false},
		{"short preamble before a call", conv.Reply{Text: "Let me read it.", ToolCalls: calls}, 25, Detection{}, false},
		{"exactly the threshold is not over it", conv.Reply{Text: words(25)}, 25, Detection{}, false},
		{"one over, no call", conv.Reply{Text: words(26)}, 25, Detection{InsteadOfTools, 26, 0}, true},
		{"one over, with calls", conv.Reply{Text: words(26), ToolCalls: append(calls, calls...)}, 25, Detection{BeforeTools, 26, 2}, true},
		{"threshold 0: any word", conv.Reply{Text: "ok"}, 0, Detection{InsteadOfTools, 1, 0}, true},
		{"threshold 0: no word", conv.Reply{Text: " — "}, 0, Detection{}, false},
		{"non-ASCII counted per character", conv.Reply{Text: strings.Repeat("我", 30)}, 25, Detection{InsteadOfTools, 30, 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Judge(&tc.reply, tc.minWords)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// fixture is a hook with counters, a feed and an observed log.
type fixture struct {
	h        *Hook
	feed     *events.Recorder
	logs     *observer.ObservedLogs
	detected map[Kind]int
	nudges   int
}

func newFixture(enabled hooks.OptIn, nudge bool) *fixture {
	core, logs := observer.New(zapcore.InfoLevel)
	f := &fixture{feed: &events.Recorder{}, logs: logs, detected: map[Kind]int{}}
	f.h = New(Options{
		Scope: hooks.Scope{Enabled: enabled}, MinWords: 25, Nudge: nudge,
		Events: f.feed, Log: zap.New(core),
		OnDetected: func(k Kind) { f.detected[k]++ },
		OnNudge:    func() { f.nudges++ },
	})
	return f
}

func callFor(msgs []conv.Message, sess *state.Session) *hooks.Call {
	if sess == nil {
		sess = &state.Session{ID: "s1", Tenant: "t1"}
	}
	return &hooks.Call{SessionID: "s1", Tenant: "t1", Route: "messages", RequestID: "r1",
		Request: &conv.Request{Messages: msgs}, Session: sess}
}

// TestOnReplyDecisions: what is judged (scope, side requests, tool loop)
// and what a detection reports.
func TestOnReplyDecisions(t *testing.T) {
	prose := conv.Reply{Text: words(40)}
	for _, tc := range []struct {
		name     string
		enabled  hooks.OptIn
		features []string
		side     string
		msgs     []conv.Message
		reply    conv.Reply
		want     Kind // "" for nothing detected
	}{
		{"tool loop, prose instead of calls", hooks.OptInOn, nil, "", loopAnthropic, prose, InsteadOfTools},
		{"tool loop, prose before calls", hooks.OptInOn, nil, "", loopChat, conv.Reply{Text: words(40), ToolCalls: []conv.ToolCall{{Name: "Read"}}}, BeforeTools},
		{"tool loop, short text", hooks.OptInOn, nil, "", loopAnthropic, conv.Reply{Text: "Reading it."}, ""},
		{"a prompt's answer is not judged", hooks.OptInOn, nil, "", prompt, prose, ""},
		{"a later prompt's answer is not judged", hooks.OptInOn, nil, "", nextPrompt, prose, ""},
		{"side request", hooks.OptInOn, nil, "title", loopAnthropic, prose, ""},
		{"header mode without the header", hooks.OptInHeader, nil, "", loopAnthropic, prose, ""},
		{"header mode, another feature named", hooks.OptInHeader, []string{"format"}, "", loopAnthropic, prose, ""},
		{"header mode with the header", hooks.OptInHeader, []string{"format", "prose"}, "", loopAnthropic, prose, InsteadOfTools},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(tc.enabled, false)
			c := callFor(tc.msgs, nil)
			c.Side, c.Features = tc.side, tc.features
			d, err := f.h.OnReply(t.Context(), c, &tc.reply)
			require.NoError(t, err)
			require.Empty(t, d.Effects, "nudge off: no session change")
			require.Empty(t, d.Calls)
			if tc.want == "" {
				require.Empty(t, f.feed.All())
				require.Empty(t, f.detected)
				require.Zero(t, f.logs.Len())
				return
			}
			require.Equal(t, map[Kind]int{tc.want: 1}, f.detected)
			require.Len(t, f.feed.All(), 1)
			ev := f.feed.All()[0]
			require.Equal(t, events.ProseDetected, ev.Type)
			require.Equal(t, "s1", ev.Session)
			require.Equal(t, "t1", ev.Tenant)
			require.Equal(t, "r1", ev.RequestID)
			require.Equal(t, map[string]any{"kind": string(tc.want), "words": 40, "calls": len(tc.reply.ToolCalls), "nudged": false}, ev.Data)
			require.Equal(t, 1, f.logs.Len())
			entry := f.logs.All()[0]
			require.Equal(t, zapcore.InfoLevel, entry.Level)
			for _, fld := range entry.Context {
				require.NotContains(t, fld.String, "word word", "the log carries counts, never the text")
			}
			require.EqualValues(t, 40, entry.ContextMap()["words"])
		})
	}
}

// TestNudgeOnce walks a session through the nudge: a detection queues it,
// a second detection before it is sent does not queue another, the next
// tool-loop request carries it (a prompt does not), and after it was sent
// no detection or request nudges again.
func TestNudgeOnce(t *testing.T) {
	f := newFixture(hooks.OptInOn, true)
	sess := &state.Session{ID: "s1", Tenant: "t1"}
	prose := &conv.Reply{Text: words(30)}

	// Before any detection: nothing to send.
	e, resp, err := f.h.OnRequest(t.Context(), callFor(loopAnthropic, sess), &conv.Request{Messages: loopAnthropic})
	require.NoError(t, err)
	require.Nil(t, resp)
	require.True(t, e.Empty())

	// A detection queues the nudge.
	d, err := f.h.OnReply(t.Context(), callFor(loopAnthropic, sess), prose)
	require.NoError(t, err)
	require.Len(t, d.Effects, 1)
	require.Equal(t, true, f.feed.All()[0].Data["nudged"])
	for _, fx := range d.Effects {
		fx(sess)
	}
	st, err := Of(sess)
	require.NoError(t, err)
	require.Equal(t, &State{Pending: true}, st)

	// A second detection while pending queues nothing more.
	d, err = f.h.OnReply(t.Context(), callFor(loopAnthropic, sess), prose)
	require.NoError(t, err)
	require.Empty(t, d.Effects)
	require.Equal(t, false, f.feed.All()[1].Data["nudged"])

	// A prompt (not a tool-loop request) does not carry it.
	c := callFor(nextPrompt, sess)
	e, _, err = f.h.OnRequest(t.Context(), c, c.Request)
	require.NoError(t, err)
	require.True(t, e.Empty())
	require.Empty(t, c.TakeDeferred())

	// A side request does not either.
	c = callFor(loopChat, sess)
	c.Side = "title"
	e, _, err = f.h.OnRequest(t.Context(), c, c.Request)
	require.NoError(t, err)
	require.True(t, e.Empty())

	// The next tool-loop request does, and defers the session change.
	c = callFor(loopChat, sess)
	e, _, err = f.h.OnRequest(t.Context(), c, c.Request)
	require.NoError(t, err)
	require.Equal(t, conv.RequestEdits{AppendUserText: []string{DefaultNudgeText}}, e)
	require.Equal(t, 1, f.nudges)
	deferred := c.TakeDeferred()
	require.Len(t, deferred, 1)
	for _, fx := range deferred {
		fx(sess)
	}
	st, err = Of(sess)
	require.NoError(t, err)
	require.Equal(t, &State{Nudged: true}, st)

	// Never again: no effect on detection, nothing on requests.
	d, err = f.h.OnReply(t.Context(), callFor(loopAnthropic, sess), prose)
	require.NoError(t, err)
	require.Empty(t, d.Effects)
	require.Equal(t, false, f.feed.All()[2].Data["nudged"])
	c = callFor(loopChat, sess)
	e, _, err = f.h.OnRequest(t.Context(), c, c.Request)
	require.NoError(t, err)
	require.True(t, e.Empty())
	require.Equal(t, 1, f.nudges)
	require.Equal(t, map[Kind]int{InsteadOfTools: 3}, f.detected)
}

// TestNudgeNotWhereItCannotBeSaved: with the session unreadable (an empty
// stand-in) a detection promises no reminder; an unreadable slot is an
// error of the request side and is left alone by the effects.
func TestNudgeNotWhereItCannotBeSaved(t *testing.T) {
	f := newFixture(hooks.OptInOn, true)
	c := callFor(loopAnthropic, nil)
	c.StateUnavailable = true
	d, err := f.h.OnReply(t.Context(), c, &conv.Reply{Text: words(30)})
	require.NoError(t, err)
	require.Empty(t, d.Effects)
	require.Equal(t, false, f.feed.All()[0].Data["nudged"])

	future := &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{}`)}
	sess := &state.Session{}
	sess.SetSlot(Name, future)
	c = callFor(loopChat, sess)
	_, _, err = f.h.OnRequest(t.Context(), c, c.Request)
	require.ErrorContains(t, err, "newer than this build reads")
	d, err = f.h.OnReply(t.Context(), callFor(loopAnthropic, sess), &conv.Reply{Text: words(30)})
	require.NoError(t, err)
	require.Empty(t, d.Effects)
	askNudge(sess)
	nudgeSent(sess)
	require.Same(t, future, sess.Slots[Name], "an unreadable slot is left as it is")
}

// TestSlotRoundTrip: the slot survives the store's encoding and its clone
// shares nothing.
func TestSlotRoundTrip(t *testing.T) {
	sess := &state.Session{}
	askNudge(sess)
	raw, err := json.Marshal(sess.Slots)
	require.NoError(t, err)
	var back state.Slots
	require.NoError(t, json.Unmarshal(raw, &back))
	got, err := Of(&state.Session{Slots: back})
	require.NoError(t, err)
	require.Equal(t, &State{Pending: true}, got)
	c := got.CloneSlot().(*State)
	c.Nudged = true
	require.False(t, got.Nudged)
	old := &state.Session{}
	old.SetSlot(Name, &state.RawSlot{V: 0})
	_, err = Of(old)
	require.ErrorContains(t, err, "older than this build reads")
}

func TestConfig(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.Empty(t, c.Validate(), "the defaults are valid")
	require.True(t, c.Off())
	require.Nil(t, c.OwnedTools())
	p, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	require.Nil(t, p, "off provisions nothing")

	c.Enabled, c.MinWords, c.Nudge, c.NudgeText = "sometimes", -1, "twice", "  "
	c.APIs = []string{"anthropic", "smoke_signals"}
	var keys []string
	for _, p := range c.Validate() {
		keys = append(keys, p.Key)
	}
	require.Equal(t, []string{"prose.enabled", "prose.apis", "prose.min_words", "prose.nudge", "prose.nudge_text"}, keys)
}

// TestProvision: the plug-in joins the APIs of its scope, registers its
// counters (both kinds at 0 from the start) and counts what the hook does.
func TestProvision(t *testing.T) {
	var c Config
	c.SetDefaults()
	c.Enabled, c.APIs, c.Nudge = hooks.OptInOn, []string{"anthropic", "gemini"}, NudgeOnce
	reg := prometheus.NewRegistry()
	p, err := c.Provision(hooks.Env{Metrics: reg, Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	h, err := p.Hook(hooks.API{Key: "openai_chat"})
	require.NoError(t, err)
	require.Nil(t, h)
	h, err = p.Hook(hooks.API{Key: "anthropic"})
	require.NoError(t, err)
	require.NotNil(t, h)
	require.Equal(t, map[string]float64{"instead_of_tools": 0, "before_tools": 0}, counters(t, reg, "shepherd_prose_replies_total"))

	sess := &state.Session{}
	d, err := h.(hooks.ReplyHook).OnReply(t.Context(), callFor(loopAnthropic, sess), &conv.Reply{Text: words(26)})
	require.NoError(t, err)
	for _, fx := range d.Effects {
		fx(sess)
	}
	c2 := callFor(loopAnthropic, sess)
	_, _, err = h.(hooks.RequestHook).OnRequest(t.Context(), c2, c2.Request)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"instead_of_tools": 1, "before_tools": 0}, counters(t, reg, "shepherd_prose_replies_total"))
	require.Equal(t, map[string]float64{"": 1}, counters(t, reg, "shepherd_prose_nudges_total"))
}

// counters reads the counter name from reg by its first label's value
// ("" for an unlabelled one).
func counters(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			label := ""
			if len(m.GetLabel()) > 0 {
				label = m.GetLabel()[0].GetValue()
			}
			out[label] = m.GetCounter().GetValue()
		}
	}
	return out
}
