package intents

import (
	"time"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// maxEventArgs bounds the arguments an observed refusal's event carries.
const maxEventArgs = 2 << 10

// event addresses an event of typ to call's session.
func event(call *hooks.Call, typ events.Type, at time.Time, data map[string]any) events.Event {
	return events.Event{
		Type: typ, At: at, Session: call.SessionID, Tenant: call.Tenant,
		Route: call.Route, RequestID: call.RequestID, Data: data,
	}
}

// selectedEvent reports intent.selected: the intent id p defines, its
// summary and its acceptance criteria.
// starting marks the policy's current_intent_id announced on a session's
// first request.
func (h *Hook) selectedEvent(call *hooks.Call, p *policy.Policy, id string, at time.Time, starting bool) {
	data := map[string]any{"intent": id}
	if starting {
		data["starting"] = true
	}
	if in, ok := p.Intent(id); ok {
		crit := make([]string, 0, len(in.Criteria))
		for _, c := range in.Criteria {
			crit = append(crit, c.Description)
		}
		data["description"], data["criteria"] = in.Summary, crit
	}
	h.cfg.Events.Emit(event(call, events.IntentSelected, at, data))
}

// announceStartingIntent reports intent.selected (with starting true) for
// the policy's current_intent_id on a session's first request, which
// governs it until it selects another; a retry of that request reports it
// again.
func (h *Hook) announceStartingIntent(call *hooks.Call, p *policy.Policy) {
	if p == nil || p.CurrentIntentID == "" || call.Session == nil || call.Session.Requests != 0 || call.StateUnavailable {
		return
	}
	if st, err := stateOf(call.Session); err != nil || st.Active() != "" {
		return
	}
	h.selectedEvent(call, p, p.CurrentIntentID, h.cfg.Now(), true)
}

// observedEvent reports, in observe mode, a call enforce mode would have
// refused (or held: ask true) as call.refused with observed true.
func (h *Hook) observedEvent(call *hooks.Call, c conv.ToolCall, e AuditEntry, intent string, at time.Time) {
	args := string(c.Args)
	if len(args) > maxEventArgs {
		args = cutUTF8(args, maxEventArgs) + "…"
	}
	h.cfg.Events.Emit(event(call, events.CallRefused, at, map[string]any{
		"tool": c.Name, "call_id": c.ID, "hook": Name, "reason": e.Reason, "rule": e.Rule,
		"observed": true, "ask": e.Decision == DecisionWouldAsk, "intent": intent, "args": args,
	}))
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
