package turn

import (
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Outcome returns the turn's outcome as the chain's outcome hooks saw it
// (the zero outcome before Run reported it, or when no reply reached the
// reply hooks). The proxy reads it for request.finished.
func (t *Turn) Outcome() conv.TurnOutcome { return t.outcome }

// emitOutcome publishes the turn's decisions to the live feed, once, when
// the outcome is reported: each call that reached the agent
// (call.allowed), that shepherd answered (call.claimed) or refused
// (call.refused, with the text the model was told as reason), in the
// order the model made them, then each continuation of a reply cut by the
// output limit. Dropped and undelivered calls are not announced.
func (t *Turn) emitOutcome() {
	em := t.e.events
	if _, off := em.(events.Nop); off {
		return
	}
	base := events.Event{At: t.e.now(), Session: t.key.Session, Tenant: t.key.Tenant,
		Route: t.call.Route, RequestID: t.call.RequestID}
	for _, c := range t.outcome.Calls {
		ev := base
		switch c.Fate {
		case conv.FateDelivered:
			ev.Type = events.CallAllowed
			ev.Data = map[string]any{"tool": c.Call.Name, "call_id": c.Call.ID}
		case conv.FateClaimed:
			ev.Type = events.CallClaimed
			ev.Data = map[string]any{"tool": c.Call.Name, "call_id": c.Call.ID, "hook": c.Hook}
		case conv.FateRefused:
			ev.Type = events.CallRefused
			ev.Data = map[string]any{"tool": c.Call.Name, "call_id": c.Call.ID, "hook": c.Hook,
				"reason": c.Result, "rule": c.Rule, "observed": false}
		default:
			continue
		}
		em.Emit(ev)
	}
	// Only a reply cut by the output limit is continued (a context-window
	// cut is reported, never continued).
	for i := 1; i <= t.outcome.Continuations; i++ {
		ev := base
		ev.Type = events.Continuation
		ev.Data = map[string]any{"attempt": i, "stop": string(conv.StopMaxTokens)}
		em.Emit(ev)
	}
}
