// Package topics is the topic-chapters feature (docs/features.md): it offers
// the model a create_new_topic tool, reminds it of the active topic on every
// turn, and records the chapters of a session with the tool calls made under
// each, in the session's "topics" slot.
package topics

import (
	"context"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Topic defaults: the texts documented in the README.
const (
	DefaultTopicTool     = "create_new_topic"
	DefaultTopicGuidance = "Organise your work into logical chapters with the create_new_topic tool. " +
		"Call it when you move between major steps of the task (for example Research → Strategy → Implementation), " +
		"before the actions of the new step. Topics only move forward: a new topic starts a new chapter."
	// DefaultTopicReminder is the per-turn reminder; {title} is replaced by
	// the active topic.
	DefaultTopicReminder = "[Active Topic: {title}]\n" +
		"If the current active topic no longer describes your current phase of work, use create_new_topic to start a new chapter."
	// DefaultNoTopicReminder is the reminder before the first chapter.
	DefaultNoTopicReminder = "[Active Topic: none yet]\n" +
		"Use create_new_topic to start the first chapter of this work before you act."
	topicToolDescription = "Start a new chapter (topic) of the work, such as \"Researching Codebase\" or \"Implementing Fix\". " +
		"Call it when moving to a new major step, before the calls that belong to it. Returns a confirmation."
)

// Placement says where the per-turn topic reminder goes.
type Placement string

// Reminder placements. PlacementLastUser appends it to the newest user turn,
// after every cache breakpoint, which keeps provider prompt caches hitting.
// PlacementSystem appends it to the system prompt; it changes the cache
// prefix whenever the topic changes and is meant for models without caching.
const (
	PlacementLastUser Placement = "last_user"
	PlacementSystem   Placement = "system"
)

// Options configure the hook (Config.Provision builds them from the
// configuration section). Zero fields take the defaults.
type Options struct {
	ToolName        string
	Placement       Placement
	Guidance        string
	Reminder        string // {title} is replaced by the active topic
	NoTopicReminder string
	// Limits bound the chapters and call notes kept per session (zero
	// fields: DefaultMaxChapters, DefaultMaxCalls).
	Limits Limits
	// Now is the clock for chapter and call times (tests); default time.Now.
	Now func() time.Time
	// OnTopicChange, when set, is called once per accepted create_new_topic
	// call (metrics).
	OnTopicChange func()
	// Events is the live feed chapter.opened is emitted to (nil: none).
	Events events.Emitter
}

// Hook is topic chapters (docs/features.md): it offers the model a create_new_topic
// tool and guidance, reminds it of the active topic on every turn, answers
// its create_new_topic calls itself (unless the agent declares the tool, in
// which case it only tracks them), moves those calls first, and records the
// chapters of the session with the tool calls made under each.
//
// Hook is stateless: all state lives in the session's slot (State), read
// from Call and changed through ReplyDecision.Effects. It is safe for
// concurrent use.
type Hook struct {
	cfg  Options
	spec conv.ToolSpec
}

var (
	_ hooks.RequestHook = (*Hook)(nil)
	_ hooks.ReplyHook   = (*Hook)(nil)
)

// New builds the hook. The tool definition is rendered once, so it is
// byte-identical on every request.
func New(cfg Options) *Hook {
	if cfg.ToolName == "" {
		cfg.ToolName = DefaultTopicTool
	}
	if cfg.Placement == "" {
		cfg.Placement = PlacementLastUser
	}
	if cfg.Guidance == "" {
		cfg.Guidance = DefaultTopicGuidance
	}
	if cfg.Reminder == "" {
		cfg.Reminder = DefaultTopicReminder
	}
	if cfg.NoTopicReminder == "" {
		cfg.NoTopicReminder = DefaultNoTopicReminder
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Limits = cfg.Limits.withDefaults()
	return &Hook{cfg: cfg, spec: conv.ToolSpec{
		Name:        cfg.ToolName,
		Description: topicToolDescription,
		Parameters: []byte(`{"type":"object","properties":{"title":{"type":"string",` +
			`"description":"Short title of the new chapter, e.g. \"Implementing Fix\""}},"required":["title"]}`),
	}}
}

// Name implements Hook.
func (t *Hook) Name() string { return Name }

// OnRequest injects the tool and guidance (static, identical on every
// request) and the reminder of the active topic (dynamic, at the end of the
// newest user turn unless Placement is system). When the agent declares a
// tool of the same name it injects nothing: the agent runs the tool and
// Topics only tracks its calls.
func (t *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	if call.Side != "" || req.HasTool(t.cfg.ToolName) {
		return conv.RequestEdits{}, nil, nil
	}
	st, err := stateOf(call.Session)
	if err != nil {
		return conv.RequestEdits{}, nil, err
	}
	topic := st.Active()
	e := conv.RequestEdits{AddTools: []conv.ToolSpec{t.spec}, AppendSystem: []string{t.cfg.Guidance}}
	reminder := t.Reminder(topic)
	if t.cfg.Placement == PlacementSystem {
		e.AppendSystem = append(e.AppendSystem, reminder)
	} else {
		e.AppendUserText = []string{reminder}
	}
	return e, nil, nil
}

// Reminder renders the per-turn reminder for topic ("" before the first
// chapter).
func (t *Hook) Reminder(topic string) string {
	if topic == "" {
		return t.cfg.NoTopicReminder
	}
	return strings.ReplaceAll(t.cfg.Reminder, "{title}", topic)
}

// TopicResult is the exact tool result of a successful create_new_topic.
func TopicResult(title string) string { return `Topic changed to: "` + title + `"` }

// OnReply moves create_new_topic calls first, answers them (when the agent
// does not know the tool), and records chapters and the calls made under
// them. A call without a usable title is refused with a reason.
func (t *Hook) OnReply(_ context.Context, call *hooks.Call, reply *conv.Reply) (hooks.ReplyDecision, error) {
	agentOwns := call.Request != nil && call.Request.HasTool(t.cfg.ToolName)
	now := t.cfg.Now()
	var d hooks.ReplyDecision
	var titles []string
	var others []CallNote
	for _, c := range reply.ToolCalls {
		if c.Name != t.cfg.ToolName {
			others = append(others, CallNote{Name: c.Name, ID: c.ID, At: now})
			continue
		}
		d.MoveFirst = append(d.MoveFirst, c.Index)
		title := strings.TrimSpace(gjson.GetBytes(c.Args, "title").String())
		if title == "" || !gjson.ValidBytes(c.Args) {
			if !agentOwns {
				d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Refuse,
					Result: t.cfg.ToolName + ` needs a non-empty "title" string argument.`})
			}
			continue
		}
		titles = append(titles, title)
		t.chapterOpened(call, title, titles, now)
		if t.cfg.OnTopicChange != nil {
			t.cfg.OnTopicChange()
		}
		if !agentOwns {
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Claim, Result: TopicResult(title)})
		}
	}
	if len(titles) > 0 || len(others) > 0 {
		lim := t.cfg.Limits
		d.Effects = append(d.Effects, func(sess *state.Session) {
			s, err := state.SlotForUpdate(sess, Name, decodeSlot)
			if err != nil {
				return // a slot this build cannot read is left as it is
			}
			s.record(titles, others, now, lim)
		})
	}
	return d, nil
}
