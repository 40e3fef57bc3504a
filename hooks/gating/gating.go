package gating

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Options configure the hook (Config.Provision builds them).
type Options struct {
	// Scope says on which requests the hook acts (Scope.Active).
	Scope hooks.Scope
	Rules Rules
	// OnDecision is called with every decision (metrics); nil for none.
	OnDecision func(Decision)
	// Events receives history.gated; nil for none.
	Events events.Emitter
	// Log gets a debug line per decision; nil for none.
	Log *zap.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Hook is history gating: for each request of a chat app it decides
// whether the newest user message follows up the conversation or starts a
// new topic (Rules.Decide). A new topic goes upstream with only the system
// prompt and the new message (DropBefore at the message), and its start
// is saved in the session's gating slot; a follow-up carries the history
// from the start of its topic (DropBefore at the saved start, when the
// conversation still has it; otherwise everything).
//
// A model that sees a topic from its start keeps seeing it append-only:
// each follow-up drops at the same point, so its upstream request extends
// the previous one.
type Hook struct{ o Options }

var _ hooks.RequestHook = (*Hook)(nil)

// New builds the hook.
func New(o Options) *Hook {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Events == nil {
		o.Events = events.Nop{}
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return &Hook{o: o}
}

// Name implements hooks.Hook.
func (h *Hook) Name() string { return Name }

// OnRequest implements hooks.RequestHook. Side requests (titles,
// summaries) and requests that do not end with a user message are left
// alone.
func (h *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	if !h.o.Scope.Active(call, Name) || call.Side != "" {
		return conv.RequestEdits{}, nil, nil
	}
	newest := newestUserMessage(req.Messages)
	if newest < 0 {
		return conv.RequestEdits{}, nil, nil
	}
	d := h.o.Rules.Decide(inputOf(req.Messages, newest))
	anchors := req.Anchors()
	var drop int
	switch {
	case d.Verdict == NewTopic:
		drop = newest
		call.Defer(startTopic(anchors[newest]))
	default:
		drop = topicStart(call, anchors[:newest+1])
	}
	dropped := 0
	for i := range drop {
		if req.Messages[i].Role != conv.RoleSystem {
			dropped++
		}
	}
	h.report(call, d, dropped)
	return conv.RequestEdits{DropBefore: drop}, nil, nil
}

// topicStart is the position of the saved topic start among anchors, or 0
// (keep everything) when there is none or the conversation lost it.
func topicStart(call *hooks.Call, anchors []string) int {
	st, err := Of(call.Session)
	if err != nil || st.TopicStart() == "" {
		return 0
	}
	for i, a := range anchors {
		if a == st.TopicStart() {
			return i
		}
	}
	return 0
}

// report counts, logs and publishes a decision.
func (h *Hook) report(call *hooks.Call, d Decision, dropped int) {
	if h.o.OnDecision != nil {
		h.o.OnDecision(d)
	}
	h.o.Log.Debug("history gating", zap.String("request_id", call.RequestID), zap.String("session", call.SessionID),
		zap.String("decision", string(d.Verdict)), zap.String("reason", string(d.Reason)), zap.Int("dropped", dropped))
	h.o.Events.Emit(events.Event{
		Type: events.HistoryGated, At: h.o.Now(), Session: call.SessionID, Tenant: call.Tenant,
		Route: call.Route, RequestID: call.RequestID,
		Data: map[string]any{"decision": string(d.Verdict), "reason": string(d.Reason), "dropped": dropped},
	})
}

// newestUserMessage is the index of the last message when it is on the
// user side (a user message, or tool results), else -1 (an assistant
// prefill, an empty conversation).
func newestUserMessage(msgs []conv.Message) int {
	n := len(msgs) - 1
	if n < 0 || (msgs[n].Role != conv.RoleUser && msgs[n].Role != conv.RoleTool) {
		return -1
	}
	return n
}

// inputOf reads the decision's input for the message at newest.
func inputOf(msgs []conv.Message, newest int) Input {
	in := Input{Message: text(msgs[newest]), ToolResults: hasResults(msgs[newest])}
	prevUser := -1
	for i := newest - 1; i >= 0; i-- {
		if msgs[i].Role != conv.RoleSystem {
			in.HasHistory = true
		}
		if msgs[i].Role == conv.RoleUser && !hasResults(msgs[i]) && text(msgs[i]) != "" {
			prevUser = i
			break
		}
	}
	if prevUser < 0 {
		return in
	}
	in.PrevUser = text(msgs[prevUser])
	var reply []string
	for _, m := range msgs[prevUser+1 : newest] {
		if m.Role == conv.RoleAssistant {
			reply = append(reply, text(m))
		}
	}
	in.PrevReply = strings.Join(reply, "\n")
	return in
}

// text joins a message's text blocks.
func text(m conv.Message) string {
	var parts []string
	for _, b := range m.Blocks {
		if b.Kind == conv.BlockText {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// hasResults reports a tool message or a message holding a tool result.
func hasResults(m conv.Message) bool {
	if m.Role == conv.RoleTool {
		return true
	}
	for _, b := range m.Blocks {
		if b.Kind == conv.BlockToolResult {
			return true
		}
	}
	return false
}
