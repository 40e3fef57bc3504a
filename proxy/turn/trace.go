package turn

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// HookPhase names one run of the chain's hooks within a turn.
type HookPhase string

// The hook phases a Trace sees.
const (
	PhaseRequest HookPhase = "request" // Chain.RunRequest, in Begin
	PhaseReply   HookPhase = "reply"   // Chain.RunReply, once per reply
	PhaseOutcome HookPhase = "outcome" // Chain.RunOutcome, once per turn
)

// Trace is what a turn tells a tracer of its phases (the proxy's
// OpenTelemetry spans, proxy/tracing*.go). Request.Trace nil, the default,
// traces nothing: every call site checks for nil first, so a turn without
// a trace makes no call and no allocation for it.
//
// The engine calls it on the turn's goroutine, in order: the hook phases
// never overlap (each HookPhaseStarted is followed by its
// HookPhaseEnded before the next starts), and the rounds follow each other
// (RoundReplied for the reply in hand, then RoundSending before the next
// request goes through the Sender). A Trace that also implements
// hooks.HookObserver sees each hook within each phase, between
// HookPhaseStarted and HookPhaseEnded.
type Trace interface {
	// HookPhaseStarted: the chain's hooks of phase are about to run.
	HookPhaseStarted(phase HookPhase)
	// HookPhaseEnded: they ran; err joins the HookErrors of those that
	// failed (nil: none did).
	HookPhaseEnded(phase HookPhase, err error)
	// RoundReplied: the reply of the current upstream round was read and
	// parsed (its model, stop and usage are the round's).
	RoundReplied(reply *conv.Reply)
	// RoundSending: the engine is about to send the next request of the
	// turn through its Sender: a continuation of a cut reply (cont) or a
	// follow-up after shepherd answered the calls of a reply.
	RoundSending(cont bool)
	// OpeningSaved: the turn opened a conversation and its state was
	// saved under session, the id the agent's next request carries.
	OpeningSaved(session string)
}
