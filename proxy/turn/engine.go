// Package turn is shepherd's turn engine: it runs one model request through
// the hook chain and serves its reply, JSON or streamed, through one reply
// loop.
//
// Request side (Engine.Begin): load the session, append the hooks' per-turn
// text to the newest user turn, replay the ledger so the model sees every
// earlier turn exactly as before, then apply the hooks' static edits.
//
// Reply side (Turn.Run): read each reply through a Writer, run the reply
// hooks, answer the calls shepherd claims or refuses, continue a reply cut
// by the output limit, follow up upstream while every call of a reply is
// answered by shepherd (each cause within its own bound), record what the
// agent's copy lacks in the ledger, save the session in one atomic update,
// end the agent's reply, and report the turn's outcome to the chain.
//
// The engine knows nothing of the HTTP server: its dependencies (store,
// metrics, logger, clock) are given to New, and each turn gets its hook
// chain, codecs, upstream Sender and Writer from the caller.
package turn

import (
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/pricing"
	"github.com/shepherd-proxy/shepherd/state"
)

// Metrics is what the engine reports. The proxy's Prometheus metrics
// implement it; route is the logical route name of the turn.
type Metrics interface {
	// StoreError counts a failed store operation ("get", "update").
	StoreError(op string)
	// HookFailed counts a hook that failed; the chain went on without it.
	HookFailed(hook string)
	// LedgerReplayed counts the ledger entries one request replayed
	// (applied), did not find in the conversation (missed), and could not
	// read (unreadable: an unknown record version; skipped).
	LedgerReplayed(applied, missed, unreadable int)
	// CallsAnswered counts tool calls shepherd answered itself.
	CallsAnswered(n int)
	// FollowUp counts a follow-up request sent after shepherd answered the
	// calls of a reply; Continuation one sent to continue a cut reply.
	FollowUp(route string)
	Continuation(route string)
	// Truncated counts a reply cut by the output limit ("max_tokens") or
	// the context window ("context_window").
	Truncated(route, stop string)
	// Recovery records, once per turn recovery continued, its result
	// (Recovered, Exhausted, Failed) and the latency it added.
	Recovery(route, result string, added time.Duration)
}

// Limits bound, per cause, the requests a turn sends upstream after the
// agent's own (continuations are bounded by the recovery hook).
type Limits struct {
	// MaxFollowups bounds the follow-ups after shepherd claimed every call
	// of a reply (config turns.max_followups).
	MaxFollowups int
	// MaxRefusalRounds bounds the follow-ups after shepherd refused some
	// call of a reply and answered the rest (config
	// turns.max_refusal_rounds).
	MaxRefusalRounds int
}

// Options are an Engine's dependencies. Store, Metrics and SessionFor are
// required.
type Options struct {
	Store   state.Store
	Metrics Metrics
	Log     *zap.Logger // nil logs nothing
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// StoreTimeout bounds each store call (0: one second).
	StoreTimeout time.Duration
	Limits       Limits
	// Recovery reports that truncation recovery runs (some chain has the
	// recovery hook): a reply still cut inside a tool call after the last
	// attempt then loses that call.
	Recovery bool
	// Events is the live feed the engine reports each turn's calls,
	// continuations and usage to (nil: events.Nop).
	Events events.Emitter
	// Prices turns each turn's usage into the cost added to its session
	// (nil: usage is counted, cost stays 0).
	Prices *pricing.Table
	// Approvals keeps the calls a reply hook holds (conv.Hold) until a
	// person decides (any replica may record the decision); nil refuses
	// held calls, saying approvals are unavailable.
	Approvals state.Approvals
	// Holds time held calls (a zero field takes DefaultHolds' value).
	Holds Holds
	// SessionFor names the session of a conversation known by its
	// fingerprint (an opening request's state is saved under the
	// fingerprint of its continuation).
	SessionFor func(fingerprint string) string
	// HistoryMemoBytes bounds the history memo (history_memo.go): the
	// previous request's bodies per session, so that hashing a turn's
	// conversation costs what is new in it; 0 keeps none.
	HistoryMemoBytes int64
	// SpliceMemoBytes bounds the splice memo (splice_memo.go): the edits
	// that put the ledger's user texts into earlier turns, per session, so
	// that a request does not make them again; 0 keeps none.
	SpliceMemoBytes int64
}

// Engine runs turns. It is built once and is safe for concurrent use; each
// Turn it begins is not.
type Engine struct {
	store        state.Store
	metrics      Metrics
	log          *zap.Logger
	now          func() time.Time
	storeTimeout time.Duration
	limits       Limits
	recovery     bool
	sessionFor   func(string) string
	events       events.Emitter
	prices       *pricing.Table
	approvals    state.Approvals
	holds        Holds
	history      *historyMemo
	splices      *spliceMemo
}

// New builds an Engine from its dependencies.
func New(o Options) *Engine {
	e := &Engine{
		store: o.Store, metrics: o.Metrics, log: o.Log, now: o.Now,
		storeTimeout: o.StoreTimeout, limits: o.Limits, recovery: o.Recovery, sessionFor: o.SessionFor,
		events: o.Events, prices: o.Prices, approvals: o.Approvals, holds: o.Holds.withDefaults(),
		history: newHistoryMemo(o.HistoryMemoBytes), splices: newSpliceMemo(o.SpliceMemoBytes),
	}
	if e.events == nil {
		e.events = events.Nop{}
	}
	if e.log == nil {
		e.log = zap.NewNop()
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.storeTimeout <= 0 {
		e.storeTimeout = time.Second
	}
	return e
}
