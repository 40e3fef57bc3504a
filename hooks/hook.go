// Package hooks is the contract between the proxy and its features: the
// phases a hook may implement (request, reply, outcome), the Chain that runs
// them, and the plug-in lifecycle (Section, Plugin: provision from a config
// section, validate, close). Each feature lives in a package of its own
// below (hooks/topics, hooks/intents, hooks/recovery), listed once in
// hooks/registry.
package hooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Call carries what a hook may know about the request in flight besides the
// body view. It is created per request by the proxy and is not safe for use
// from several goroutines.
type Call struct {
	// Route is the logical route name (for metrics and logs only; hooks must
	// not branch on it to special-case a provider).
	Route string
	// RequestID is the proxy's id of the request (for logs only).
	RequestID string
	// SessionID and Tenant identify the session; Tenant is a hash of the
	// credential, never the credential itself.
	SessionID string
	Tenant    string
	// Request is the view of the request being served, as the agent sent it
	// (read-only). Reply hooks use it to know what the agent declared.
	Request *conv.Request
	// Session is a read-only view of the session: as loaded before the
	// request hooks ran, and from the turn's first reply decision with
	// effects on, the same as Live (the effects of the turn's earlier
	// rounds applied). It is never nil when hooks run. If the state store
	// cannot be read the proxy normally skips the chain (fail-open
	// pass-through); when a hook must fail closed (intents.on_error closed)
	// the chain runs on an empty session with StateUnavailable set.
	Session *state.Session
	// Saved is the session as this turn saved it (its effects applied:
	// a chapter opened or an intent selected during the turn), set before
	// the outcome hooks run; nil before then and when nothing was saved.
	Saved *state.Session
	// Live is the session with this turn's effects so far: the session as
	// loaded with the effects of the turn's reply decisions applied as the
	// turn engine accepts them (a chapter opened by a topics call shepherd
	// answered, before the follow-up's calls arrive). nil until a reply
	// decision of the turn has effects. Read-only: the engine applies each
	// effect to it once, and the save applies them again, atomically, to
	// the stored session.
	Live *state.Session
	// StateUnavailable reports that Session is an empty stand-in because the
	// state store could not be read; effects will probably not be saved.
	StateUnavailable bool
	// OutputLimit is the output-token limit of the request that produced the
	// reply being decided (0 when the request sets none), and Recoveries the
	// number of truncation continuations already made in this turn. The
	// turn engine keeps both current across rounds.
	OutputLimit int64
	Recoveries  int
	// Side, when not empty, says the request is a side request (not an
	// agent turn: no tools, tool calls forbidden, or JSON output; the value
	// is its kind) that features.side_requests leaves alone. Hooks must then
	// inject no tool, rule or reminder; the proxy does not count it as a
	// turn of the session.
	Side string
	// Agent names the client as the proxy recognised it (claude-code,
	// codex, gemini-cli, cline, an SDK, or "" when unknown); for display
	// and events only, never to special-case behaviour.
	Agent string
	// Features are the opt-in features the request's FeaturesHeader names
	// (lower-cased); Scope.Active reads them.
	Features []string
	// Observer, when not nil, sees each hook the chain runs for this
	// request (the proxy's tracing: a span per hook). Hooks ignore it.
	Observer HookObserver

	// deferred are session changes request hooks asked for (Defer).
	deferred []func(*state.Session)
}

// OptedIn reports whether the request's FeaturesHeader names feature.
func (c *Call) OptedIn(feature string) bool {
	for _, f := range c.Features {
		if f == feature {
			return true
		}
	}
	return false
}

// Defer records a change to the session that a request hook decided (a
// compaction epoch, a gating decision, a nudge sent): the turn engine
// applies it, with the turn's other effects, in the one atomic save of the
// turn, and to Live. A request that is answered by a hook (short-circuit)
// or passes through without a turn saves nothing, so a deferred change is
// lost with it. fx must be a pure function of the session it is given.
func (c *Call) Defer(fx func(*state.Session)) { c.deferred = append(c.deferred, fx) }

// TakeDeferred returns the changes Defer recorded and forgets them (the
// turn engine calls it after the request hooks ran).
func (c *Call) TakeDeferred() []func(*state.Session) {
	d := c.deferred
	c.deferred = nil
	return d
}

// HookObserver sees each hook of a chain run, on the request's goroutine:
// HookStarted just before the hook's phase method is called, HookEnded
// with its error (nil when it succeeded) just after.
type HookObserver interface {
	HookStarted(name string)
	HookEnded(name string, err error)
}

func observeStart(call *Call, h Hook) {
	if call != nil && call.Observer != nil {
		call.Observer.HookStarted(h.Name())
	}
}

func observeEnd(call *Call, h Hook, err error) {
	if call != nil && call.Observer != nil {
		call.Observer.HookEnded(h.Name(), err)
	}
}

// Hook is the base every feature implements.
type Hook interface {
	// Name is a short stable identifier used in logs and metrics.
	Name() string
}

// RequestHook inspects a request before it goes upstream.
//
// Contract:
//   - Hooks run in chain order. Each sees the same read-only view (the
//     request as the agent sent it); edits are merged in chain order.
//   - Returning (edits, nil, nil) continues the chain.
//   - Returning a non-nil *Response short-circuits: no later request hook
//     runs, nothing is sent upstream, and the response is written to the agent.
//   - Returning a non-nil error aborts the hook only: the chain goes on without
//     that hook's edits and the error is logged and counted (fail-open). A hook
//     that must fail closed returns a short-circuit Response instead.
//   - A hook must not retain req after it returns.
type RequestHook interface {
	Hook
	OnRequest(ctx context.Context, call *Call, req *conv.Request) (conv.RequestEdits, *Response, error)
}

// ReplyHook inspects a complete model reply (a JSON body, or a stream's tool
// calls once each is complete) before the agent receives it.
//
// Every reply of a turn is decided, streamed or not, with or without tool
// calls, follow-ups and continuations included: on a stream the hooks run
// once it has ended, on the view of the whole reply (conv.Reply.Text holds
// all of its text, which has already reached the agent; only its tool
// calls are still held).
//
// Contract:
//   - Reply hooks run in reverse chain order (the hook whose request side ran
//     last sees the reply first), and only hooks that implement ReplyHook.
//   - For a given tool call the first hook that decides Claim or Refuse wins;
//     later hooks' decisions on that call are ignored. MoveFirst lists and
//     Effects are concatenated in the order the hooks ran.
//   - A non-nil error drops that hook's decision (fail-open), logged and
//     counted.
//   - A decision with Continue set short-circuits: the chain returns it
//     alone (with its effects); no later hook sees the truncated reply.
type ReplyHook interface {
	Hook
	OnReply(ctx context.Context, call *Call, reply *conv.Reply) (ReplyDecision, error)
}

// Response is a short-circuit answer written to the agent without going
// upstream. The proxy renders Message in the calling API's error shape when
// Status >= 400.
type Response struct {
	Status  int
	Message string
	// Headers are extra response headers (a budget's refusal sends
	// x-should-retry: false, which the official SDKs honour, so the
	// agent does not retry a request that will be refused again).
	Headers map[string]string
}

// HookError records a hook that failed; the chain continued without it.
type HookError struct {
	Hook string
	Err  error
}

func (e *HookError) Error() string { return fmt.Sprintf("hook %s: %v", e.Hook, e.Err) }
func (e *HookError) Unwrap() error { return e.Err }

// Chain is an ordered list of hooks. It is built once at start-up and is safe
// for concurrent use as long as its hooks are.
type Chain struct {
	hooks   []Hook
	request []RequestHook
	reply   []ReplyHook
}

// NewChain builds a chain from hooks in the order given. Each hook is
// registered for the phases whose interface it implements.
func NewChain(hs ...Hook) *Chain {
	c := &Chain{hooks: hs}
	for _, h := range hs {
		if rh, ok := h.(RequestHook); ok {
			c.request = append(c.request, rh)
		}
		if ph, ok := h.(ReplyHook); ok {
			c.reply = append(c.reply, ph)
		}
	}
	// Reply hooks run in reverse order.
	for i, j := 0, len(c.reply)-1; i < j; i, j = i+1, j-1 {
		c.reply[i], c.reply[j] = c.reply[j], c.reply[i]
	}
	return c
}

// Empty reports whether the chain has no hooks at all, so the proxy can take
// the pure pass-through path.
func (c *Chain) Empty() bool { return c == nil || len(c.hooks) == 0 }

// FailClosed is implemented by a hook that must run even when the session
// state cannot be read (intents with on_error closed): the proxy then runs
// the chain on an empty session with Call.StateUnavailable set instead of
// passing the request through.
type FailClosed interface {
	FailsClosed() bool
}

// FailsClosed reports whether a hook of the chain fails closed.
func (c *Chain) FailsClosed() bool { return c != nil && anyHook(c.hooks, FailClosed.FailsClosed) }

// anyHook reports whether a hook of hs implements I and answers true.
func anyHook[H, I any](hs []H, answer func(I) bool) bool {
	for _, h := range hs {
		if i, ok := any(h).(I); ok && answer(i) {
			return true
		}
	}
	return false
}

// Continuer is implemented by a reply hook that may ask the turn engine to
// continue a reply (ReplyDecision.Continue).
type Continuer interface {
	MayContinue() bool
}

// Continues reports whether a hook of the chain may ask for continuations.
func (c *Chain) Continues() bool { return c != nil && anyHook(c.hooks, Continuer.MayContinue) }

// ReplyTextReader is implemented by a reply hook that reads the text of a
// reply (conv.Reply.Text). The turn engine views a JSON reply without its
// text when no hook of the chain does (rewrite.ReplyCallsParser): decoding
// the text was the largest allocation of a turn, for nobody. A reply hook
// that reads Text must implement it and return true.
type ReplyTextReader interface {
	ReadsReplyText() bool
}

// ReadsReplyText reports whether a hook of the chain reads the text of
// replies (ReplyTextReader).
func (c *Chain) ReadsReplyText() bool {
	return c != nil && anyHook(c.reply, ReplyTextReader.ReadsReplyText)
}

// HasReplyHooks reports whether any hook inspects replies.
func (c *Chain) HasReplyHooks() bool { return c != nil && len(c.reply) > 0 }

// RunRequest runs the request hooks. It returns the merged edits, a
// short-circuit response if a hook gave one, and the errors of hooks that
// failed (joined; the chain went on without them).
func (c *Chain) RunRequest(ctx context.Context, call *Call, req *conv.Request) (conv.RequestEdits, *Response, error) {
	var errs []error
	if c == nil {
		return conv.RequestEdits{}, nil, nil
	}
	var buf [8]conv.RequestEdits
	parts := buf[:0] // merged once, at the end (conv.MergeAll)
	for _, h := range c.request {
		observeStart(call, h)
		e, resp, err := h.OnRequest(ctx, call, req)
		observeEnd(call, h, err)
		if err != nil {
			errs = append(errs, &HookError{Hook: h.Name(), Err: err})
			continue
		}
		if !e.Empty() {
			parts = append(parts, e)
		}
		if resp != nil {
			return conv.MergeAll(parts), resp, errors.Join(errs...)
		}
	}
	return conv.MergeAll(parts), nil, errors.Join(errs...)
}

// RunReply runs the reply hooks and merges their decisions per the ReplyHook
// contract. The returned decision lists at most one decision per call.
func (c *Chain) RunReply(ctx context.Context, call *Call, reply *conv.Reply) (ReplyDecision, error) {
	var out ReplyDecision
	var errs []error
	if c == nil {
		return out, nil
	}
	decided := map[int]bool{}
	for _, h := range c.reply {
		observeStart(call, h)
		d, err := h.OnReply(ctx, call, reply)
		observeEnd(call, h, err)
		if err != nil {
			errs = append(errs, &HookError{Hook: h.Name(), Err: err})
			continue
		}
		if d.Continue != nil {
			return ReplyDecision{Continue: d.Continue, Effects: d.Effects}, errors.Join(errs...)
		}
		for _, cd := range d.Calls {
			if cd.Verdict == conv.Pass || decided[cd.CallIndex] {
				continue
			}
			decided[cd.CallIndex] = true
			cd.Hook = h.Name()
			out.Calls = append(out.Calls, cd)
		}
		out.MoveFirst = append(out.MoveFirst, d.MoveFirst...)
		out.Effects = append(out.Effects, d.Effects...)
	}
	return out, errors.Join(errs...)
}

// OutcomeHook sees what finally happened in a turn: every tool call's fate
// (delivered, claimed, refused, dropped, undelivered) after all reply hooks
// decided and the turn engine acted, with the turn's usage and rounds.
//
// Contract:
//   - OnOutcome runs once per turn that ran the reply chain, after the
//     agent got its reply (or the turn failed), in chain order.
//   - It observes only: it cannot change the reply or the session (state
//     changes belong in ReplyDecision.Effects, applied atomically).
//   - It must not block: it runs on the request's goroutine after the
//     reply was written. An error is logged and counted, nothing else.
type OutcomeHook interface {
	Hook
	OnOutcome(ctx context.Context, call *Call, out *conv.TurnOutcome) error
}

// RunOutcome gives out to every hook that implements OutcomeHook, in chain
// order, and returns the errors of those that failed (joined).
func (c *Chain) RunOutcome(ctx context.Context, call *Call, out *conv.TurnOutcome) error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, h := range c.hooks {
		oh, ok := h.(OutcomeHook)
		if !ok {
			continue
		}
		observeStart(call, h)
		err := oh.OnOutcome(ctx, call, out)
		observeEnd(call, h, err)
		if err != nil {
			errs = append(errs, &HookError{Hook: h.Name(), Err: err})
		}
	}
	return errors.Join(errs...)
}
