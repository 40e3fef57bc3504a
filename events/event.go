// Package events is shepherd's live feed: what the proxy did in each
// session (requests, chapters, intents, tool-call decisions, approvals,
// continuations, usage), published without slowing a request and kept per
// session in the state store so any replica can show it.
//
// This file is the contract every producer and consumer shares: the Event
// and its types. The package imports nothing of the project, so hooks, the
// turn engine and the proxy may all emit.
package events

import "time"

// Type names what happened. The data each type carries is listed with it;
// data keys are snake_case JSON and stable (the console and API clients
// read them).
type Type string

const (
	// RequestStarted: a model request arrived. Data: model, agent, stream
	// (bool), side (side-request kind, "" for an agent turn).
	RequestStarted Type = "request.started"
	// RequestFinished: the agent got its reply (or an error). Data:
	// status, duration_ms, model, stop, rounds, continuations, usage
	// {input_tokens, output_tokens, cache_read_tokens, cache_write_tokens},
	// cost_usd, error (when the turn failed), overhead_ms (shepherd's own
	// time until the reply's headers, upstream waiting excluded; the
	// X-Shepherd-Overhead header or trailer). A turn the engine ran also
	// has the cache-integrity keys (docs/diagnostics.md): prefix_hash (16
	// hex digits, a hash of the conversation sent upstream),
	// prefix_break_offset (the byte offset in the upstream body where it
	// first differs from the previous request of the conversation; -1
	// when it extends it) and prefix_break_cause ("" without a break,
	// else client, compaction, gating or proxy).
	RequestFinished Type = "request.finished"
	// ChapterOpened: topics opened a chapter. Data: title, previous.
	ChapterOpened Type = "chapter.opened"
	// IntentSelected: intents selected an intent, or a session's first
	// request starts under the policy's current intent. Data: intent,
	// description, criteria ([]string, acceptance criteria), starting
	// (true for the policy's starting intent).
	IntentSelected Type = "intent.selected"
	// CallAllowed: a tool call reached the agent. Data: tool, call_id.
	CallAllowed Type = "call.allowed"
	// CallClaimed: shepherd answered a call of its own tools. Data: tool,
	// call_id, hook.
	CallClaimed Type = "call.claimed"
	// CallRefused: a call was refused; the model was told why. Data: tool,
	// call_id, hook, reason, rule, observed (true in observe mode: the call
	// would have been refused and was let through).
	CallRefused Type = "call.refused"
	// CallHeld: a call waits for a person's approval. Data: approval (the
	// approval id, also the {call} of the approvals API), tool, call_id,
	// args (truncated), intent, reason, rule, expires_at.
	CallHeld Type = "call.held"
	// CallApproved / CallDenied: a held call was decided. Data: approval,
	// tool, call_id, by ("console", "api", "timeout", or "shepherd" when
	// the agent left while the call was held), note.
	CallApproved Type = "call.approved"
	CallDenied   Type = "call.denied"
	// Continuation: a reply cut by the output limit was continued. Data:
	// attempt, stop.
	Continuation Type = "continuation"
	// EditStarted: a file-writing call, announced as soon as its path is
	// complete in the stream (long before its content ends). Data: tool,
	// call_id, path, operation (create, rewrite, modify, delete), chapter,
	// intent.
	EditStarted Type = "edit.started"
	// EditFinished: the file-writing call is complete. Data: as
	// EditStarted, and size (bytes of the content or patch it carries).
	EditFinished Type = "edit.finished"
	// RouteSelected: a routing rule picked the model and upstream of a
	// request. Data: rule, requested_model, model, upstream, sticky (true
	// when the session's earlier choice was kept), refused (true when the
	// rule refused the request).
	RouteSelected Type = "route.selected"
	// ProseDetected: in a tool-loop turn the model wrote prose instead of,
	// or before, its tool calls. Data: kind ("instead_of_tools" or
	// "before_tools"), words, calls, nudged (true when a reminder will
	// follow on the next request).
	ProseDetected Type = "prose.detected"
	// ContextCompacted: old tool results were compacted (a new epoch).
	// Data: epoch, results (how many compacted), kept_chars, omitted_chars,
	// estimated_tokens_before, estimated_tokens_after.
	ContextCompacted Type = "context.compacted"
	// HistoryGated: history gating decided whether a message follows up
	// or starts a new topic. Data: decision ("follow_up" or "new_topic"),
	// reason (the rule that decided), dropped (messages left out).
	HistoryGated Type = "history.gated"
	// FormatApplied: a format rule added its instruction. Data: rule.
	FormatApplied Type = "format.applied"
	// BudgetReached: a session budget or runaway cap refused a request
	// (HTTP 429) or a tool call. Data: budget (turns, tokens, cost_usd,
	// tool_calls, identical_calls), limit, spent, tool (for the call caps),
	// call_id (for a refused call).
	BudgetReached Type = "budget.reached"
)

// Event is one thing that happened in a session.
type Event struct {
	// ID is assigned by the log the event is read from (increasing within
	// that log; the SSE id); empty while it is being published.
	ID   string    `json:"id,omitempty"`
	Type Type      `json:"type"`
	At   time.Time `json:"at"`
	// Session and Tenant (a hash of the credential, never the credential)
	// address the session.
	Session   string `json:"session"`
	Tenant    string `json:"tenant"`
	Route     string `json:"route,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Data holds the type's fields (see Type). It is encoded off the
	// request path; producers must not change it after Emit.
	Data map[string]any `json:"data,omitempty"`
	// Fields, when set, holds them instead, typed (request.go): the
	// events of every request use it.
	Fields Fields `json:"-"`
}

// Emitter accepts events. Emit never blocks and never fails: a full queue
// drops its oldest event and counts it. Implementations are safe for
// concurrent use.
type Emitter interface {
	Emit(ev Event)
}

// Nop is an Emitter that drops every event (the feed is off).
type Nop struct{}

// Emit implements Emitter.
func (Nop) Emit(Event) {}
