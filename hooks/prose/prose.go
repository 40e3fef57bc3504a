package prose

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Kind is what a detected prose reply did.
type Kind string

// Kinds of prose in the tool loop.
const (
	// InsteadOfTools: prose and no tool call.
	InsteadOfTools Kind = "instead_of_tools"
	// BeforeTools: prose with the tool calls. The neutral reply view does
	// not order text against calls; models write their text first (Chat
	// has no order at all), so prose beside calls counts as before them.
	BeforeTools Kind = "before_tools"
)

// Options configure the hook (Config.Provision builds them from the
// configuration section).
type Options struct {
	// Scope says which requests the hook acts on (Scope.Active).
	Scope hooks.Scope
	// MinWords: a reply is prose when its text has more words.
	MinWords int
	// Nudge turns on the once-per-session reminder; NudgeText is it ("":
	// DefaultNudgeText).
	Nudge     bool
	NudgeText string
	// Events receives prose.detected (nil: none); Log the info line of a
	// detection (nil: none).
	Events events.Emitter
	Log    *zap.Logger
	// OnDetected and OnNudge count detections and reminders sent (nil:
	// not counted).
	OnDetected func(Kind)
	OnNudge    func()
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Hook detects prose in the tool loop (docs/context.md).
//
// A request is a tool-loop request when it carries the results of the
// model's previous tool calls (conv.Request.ToolLoop); every upstream
// reply of such a turn is judged, follow-ups included (a follow-up answers tool results
// too: those shepherd gave for the calls it claimed), because the metric
// measures what the model writes, not what the agent reads. A reply whose
// text has more than MinWords words (CountWords) is detected: with no tool
// call as InsteadOfTools, with tool calls as BeforeTools. The final answer
// that ends a tool loop is prose without a tool call too, and counts: the
// proxy cannot tell it from prose in place of a call, which is why the
// threshold is configurable and the reminder asks to keep prose for the
// final answer. A turn that opens with the user's prompt is never judged,
// follow-ups included (the model answers the prompt there).
//
// Side requests are left alone, and so are requests the scope leaves out.
//
// With Nudge, the first detection of a session (Pending not yet set, no
// reminder sent) sets Pending through the reply's effects; the session's
// next tool-loop request gets NudgeText appended to its newest user turn
// (the turn engine records it in the ledger and replays it, so later
// requests repeat it byte for byte) and, through Call.Defer, clears
// Pending and sets Nudged: one reminder per session.
//
// The hook is stateless: all state is in the session's slot (State). It
// is safe for concurrent use.
type Hook struct{ cfg Options }

var (
	_ hooks.RequestHook = (*Hook)(nil)
	_ hooks.ReplyHook   = (*Hook)(nil)
)

// New builds the hook.
func New(cfg Options) *Hook {
	if cfg.NudgeText == "" {
		cfg.NudgeText = DefaultNudgeText
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hook{cfg: cfg}
}

// Name implements hooks.Hook.
func (h *Hook) Name() string { return Name }

// acts reports whether the hook acts on call at all.
func (h *Hook) acts(call *hooks.Call) bool {
	return call.Side == "" && h.cfg.Scope.Active(call, Name)
}

// OnRequest sends the nudge the session is owed on a tool-loop request.
func (h *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	if !h.cfg.Nudge || !h.acts(call) || !req.ToolLoop() {
		return conv.RequestEdits{}, nil, nil
	}
	st, err := Of(call.Session)
	if err != nil {
		return conv.RequestEdits{}, nil, err
	}
	if !st.Owes() {
		return conv.RequestEdits{}, nil, nil
	}
	call.Defer(nudgeSent)
	if h.cfg.OnNudge != nil {
		h.cfg.OnNudge()
	}
	return conv.RequestEdits{AppendUserText: []string{h.cfg.NudgeText}}, nil, nil
}

// Detection is what Judge found in one reply.
type Detection struct {
	Kind  Kind
	Words int
	Calls int
}

// Judge decides whether reply, given to a request of a tool-loop turn, is
// prose: more than minWords words, with no tool call (InsteadOfTools) or
// beside its calls (BeforeTools).
func Judge(reply *conv.Reply, minWords int) (Detection, bool) {
	words := CountWords(reply.Text)
	if words <= minWords {
		return Detection{}, false
	}
	d := Detection{Kind: InsteadOfTools, Words: words, Calls: len(reply.ToolCalls)}
	if d.Calls > 0 {
		d.Kind = BeforeTools
	}
	return d, true
}

// ReadsReplyText implements hooks.ReplyTextReader: the judge counts the
// reply's words.
func (h *Hook) ReadsReplyText() bool { return true }

// OnReply judges a reply of a tool-loop turn and reports prose: the
// metric, an info log (counts only, never the text), prose.detected, and
// with Nudge the effect that queues the reminder.
func (h *Hook) OnReply(_ context.Context, call *hooks.Call, reply *conv.Reply) (hooks.ReplyDecision, error) {
	if !h.acts(call) || !call.Request.ToolLoop() {
		return hooks.ReplyDecision{}, nil
	}
	det, ok := Judge(reply, h.cfg.MinWords)
	if !ok {
		return hooks.ReplyDecision{}, nil
	}
	var d hooks.ReplyDecision
	nudged := false
	if h.cfg.Nudge && !call.StateUnavailable {
		st, err := Of(call.Session)
		if err == nil && st.MayAsk() {
			nudged = true
			d.Effects = []func(*state.Session){askNudge}
		}
	}
	h.report(call, det, nudged)
	return d, nil
}

// report counts, logs and emits a detection.
func (h *Hook) report(call *hooks.Call, det Detection, nudged bool) {
	if h.cfg.OnDetected != nil {
		h.cfg.OnDetected(det.Kind)
	}
	if h.cfg.Log != nil {
		h.cfg.Log.Info("prose in the tool loop", zap.String("request_id", call.RequestID),
			zap.String("route", call.Route), zap.String("session", call.SessionID),
			zap.String("kind", string(det.Kind)), zap.Int("words", det.Words), zap.Int("calls", det.Calls),
			zap.Bool("nudged", nudged))
	}
	if h.cfg.Events != nil {
		h.cfg.Events.Emit(events.Event{
			Type: events.ProseDetected, At: h.cfg.Now(), Session: call.SessionID, Tenant: call.Tenant,
			Route: call.Route, RequestID: call.RequestID,
			Data: map[string]any{"kind": string(det.Kind), "words": det.Words, "calls": det.Calls, "nudged": nudged},
		})
	}
}
