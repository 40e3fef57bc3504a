package turn

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/shepherd-proxy/shepherd/state"
)

// Request is what the caller knows of one model request when it begins a
// turn.
type Request struct {
	// Call describes the request for the hooks; Begin copies it (the turn
	// keeps its own copy, current across rounds).
	Call hooks.Call
	// Chain is the hook chain of the request's API; FailsClosed says it
	// must run even when the session cannot be loaded (on an empty session
	// marked unavailable) rather than pass through.
	Chain       *hooks.Chain
	FailsClosed bool
	// Codec, TurnCodec and Continuer are the API's codecs (Continuer is
	// nil when the API has no truncation recovery).
	Codec     rewrite.Codec
	TurnCodec rewrite.TurnCodec
	Continuer rewrite.ContinueCodec
	// View is the parsed request and Body its bytes, as the agent sent them.
	View *conv.Request
	Body []byte
	// Opening: the request has no session id and no model turn yet. Its
	// state is saved under the fingerprint of the conversation continued by
	// the reply the agent gets (Options.SessionFor).
	Opening bool
	// Trace traces the turn's hook phases and rounds (nil: not traced).
	Trace Trace
}

// Turn is one request's run through the hook chain and the turn engine.
// It is not safe for concurrent use.
type Turn struct {
	e     *Engine
	call  hooks.Call
	chain *hooks.Chain
	codec rewrite.Codec
	tc    rewrite.TurnCodec
	cc    rewrite.ContinueCodec
	key   state.Key
	view  *conv.Request // the agent's request
	body  []byte        // the agent's body
	sent  []byte        // what went upstream: the model's view
	// agentIdx is body's index as the codec parsed it, taken before the
	// build edits through the codec (nil: the codec has none).
	agentIdx *jsonkit.Index
	// ctx is the context hooks run under (Run's).
	ctx     context.Context
	entries []state.LedgerEntry
	effects []func(*state.Session)
	// base is the session as loaded (nil when new or unreadable): stores
	// that can (Redis) commit the turn against it in one round trip.
	base       *state.Session
	opening    bool
	agentReply []byte
	// outcome is what the outcome hooks get (kept here: the Turn is
	// allocated anyway).
	outcome conv.TurnOutcome
	// tally is the reply loop's outcome log, for the usage save adds to
	// the session (usage.go); nil until Run.
	tally *outcomeLog
	// loop is Run's state, kept here rather than in Run's frame: a
	// streamed turn's goroutine sits in Run for the whole stream, and
	// every byte of the frames under its upstream read counts towards the
	// goroutine's stack (see Run).
	loop replyLoop
	// prefix is the turn's cache-integrity check (prefix.go), nil when none
	// is kept, set by the goroutine that closes prefixDone (nil: none was
	// started): read it through prefixResult. prefixKey is the codec's
	// conversation member; lastSent the latest follow-up or continuation
	// sent upstream (nil: none).
	prefix     *prefixCheck
	prefixDone chan struct{}
	prefixKey  string
	lastSent   []byte
	// held is the session's history memo entry whose buffer holds sent
	// (rewrite.BuildTarget; set with prefix): releaseSent gives it back
	// to the memo (nil: none).
	held *historyRef
	// watch reports the turn's tool calls to the chain's CallWatchers
	// (watch.go); nil when none watches.
	watch *callWatch
	// trace is Request.Trace (nil: not traced).
	trace Trace
}

// Start is how Begin left a request.
type Start struct {
	// Body is what to send upstream: the model's view, or the agent's body
	// unchanged when Turn is nil (pass-through).
	Body []byte
	// Short, when not nil, is a hook's answer to the request: nothing goes
	// upstream and Turn is nil.
	Short *hooks.Response
}

// errStoreUnavailable marks a session that could not be loaded.
var errStoreUnavailable = errors.New("turn: state store unavailable")

// Begin loads the session, runs the request hooks and builds the upstream
// body. It returns a nil Turn when the request passes through untouched
// (state store down: fail-open; the turn engine failed) or a hook answered
// it (Start.Short). When the chain fails closed, a session that cannot be
// loaded does not pass through: the chain runs on an empty session marked
// unavailable, so intents refuses what it cannot vouch for.
func (e *Engine) Begin(ctx context.Context, r Request) (*Turn, Start) {
	t := &Turn{
		e: e, call: r.Call, chain: r.Chain, codec: r.Codec, tc: r.TurnCodec, cc: r.Continuer,
		key:  state.Key{Tenant: r.Call.Tenant, Session: r.Call.SessionID},
		view: r.View, body: r.Body, opening: r.Opening, ctx: ctx, trace: r.Trace,
	}
	if bi, ok := r.Codec.(rewrite.BodyIndexer); ok {
		t.agentIdx = bi.IndexOf(r.Body)
	}
	if o, ok := r.Trace.(hooks.HookObserver); ok {
		// A trace that follows single hooks sees each hook of each phase.
		t.call.Observer = o
	}
	// An opening request's id is fresh, so the load finds nothing: the
	// conversation inherits no state. It is still a read, so that a store
	// that is down is noticed before anything is injected that could not
	// be saved (fail-open and fail-closed as for any request).
	sess, err := e.loadSession(t.key)
	if err != nil {
		e.metrics.StoreError("get")
		if !r.FailsClosed {
			t.warn("session state unavailable; passing through without hooks", err)
			return nil, Start{Body: r.Body}
		}
		t.warn("session state unavailable; governance fails closed for this request", err)
		sess = &state.Session{ID: t.key.Session, Tenant: t.key.Tenant}
		t.call.StateUnavailable = true
	}
	t.call.Session = sess
	t.call.Request = r.View
	if sess.Version > 0 && !t.call.StateUnavailable {
		t.base = sess
	}

	if t.trace != nil {
		t.trace.HookPhaseStarted(PhaseRequest)
	}
	edits, resp, herr := t.chain.RunRequest(ctx, &t.call, r.View)
	if t.trace != nil {
		t.trace.HookPhaseEnded(PhaseRequest, herr)
	}
	if herr != nil {
		t.hookFailed(herr)
	}
	if resp != nil {
		return nil, Start{Short: resp}
	}
	t.accept(t.call.TakeDeferred())
	if r.View.HasMaxOutputTokens {
		t.call.OutputLimit = r.View.MaxOutputTokens
	}
	if edits.SetMaxOutputTokens > 0 {
		t.call.OutputLimit = edits.SetMaxOutputTokens
	}
	var hold *sentHold // the session's history memo entry, taken for the check
	hk, checked := t.codec.(rewrite.HistoryKeyer)
	if checked = checked && t.call.Side == "" && !t.call.StateUnavailable; checked {
		t.prefixKey = hk.ConversationKey()
		hold = t.offerTarget()
	}
	out, err := t.build(sess, edits)
	if err != nil {
		// Fail open: the agent's own request goes upstream unchanged.
		t.dropHold(hold)
		t.hookFailed(&hooks.HookError{Hook: "turn_engine", Err: err})
		return nil, Start{Body: r.Body}
	}
	t.sent = out
	if checked {
		t.startPrefix(sess, t.prefixKey, hold, len(edits.ReplaceResults) > 0, edits.DropBefore > 0)
	}
	return t, Start{Body: out}
}

// build applies, in an order that keeps positions valid: the fresh per-turn
// text at the newest user turn (recorded in the ledger under that turn's
// anchor), the ledger replay of earlier turns, and the static edits (tools,
// system, output limit) that may renumber messages.
//
// Before all that, the edits that change the agent's own messages are
// applied to its body, where view positions are still valid: tool results
// replaced (ReplaceResults), then the history before DropBefore left out;
// the replay then works on the messages that remain.
func (t *Turn) build(sess *state.Session, edits conv.RequestEdits) ([]byte, error) {
	anchors := t.view.SharedAnchors()
	root := rootAnchor(anchors) // before reshape leaves messages out
	sent := len(anchors)
	body, msgs, anchors, err := t.reshape(edits, anchors)
	if err != nil {
		return nil, err
	}
	left := sent - len(anchors) // messages reshape left out, all before the newest user turn (LedgerEntry.At counts them)
	texts := edits.AppendUserText
	edits.AppendUserText = nil
	var fresh *rewrite.UserTexts
	if target := lastUserTurn(msgs); target >= 0 && len(texts) > 0 {
		if !hasEntry(sess.Ledger, kindUserText, anchors[target]) {
			fresh = &rewrite.UserTexts{Pos: target, Texts: texts}
			t.entries = append(t.entries, state.LedgerEntry{
				Kind: kindUserText, Anchor: anchors[target], Root: root, At: target + left + 1,
				Data: encodeRecord(newUserTextRecord(texts)),
			})
		}
		// Otherwise this turn was seen before (a retry): the replay below
		// re-applies the text the model saw then.
	}
	ue, together := t.codec.(rewrite.UserTextsEditor)
	body, pending, st, err := replayLedger(t.tc, body, anchors, left, root, sess.Ledger, fresh, together)
	t.e.metrics.LedgerReplayed(st.applied, st.missed, st.unreadable)
	if err != nil {
		return nil, err
	}
	if len(pending) > 0 {
		// The replay's last user texts and the request edits in one copy
		// of the body (a long history is copied once, not twice). On the
		// agent's own body, the turns the previous request edited take
		// those edits (splice_memo.go).
		var reused *splicesReused
		if rewrite.SameSlice(body, t.body) && t.call.Side == "" {
			reused = t.e.splices.prepare(t.key, t.lineage(), anchors, pending)
		}
		out, err := ue.ApplyEditsWithUserTexts(body, pending, edits)
		reused.keep(t.e.metrics, anchors, pending, err == nil)
		return out, err
	}
	return t.codec.ApplyEdits(body, edits)
}

// lastUserTurn is the index of the newest message of the user side (a user
// message, or a tool-result message on APIs that have them), or -1.
func lastUserTurn(msgs []conv.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i].Role {
		case conv.RoleUser, conv.RoleTool:
			return i
		case conv.RoleAssistant:
			return -1 // a trailing assistant message is a prefill: leave it alone
		}
	}
	return -1
}

func hasEntry(ledger []state.LedgerEntry, kind, anchor string) bool {
	for i := range ledger {
		if ledger[i].Kind == kind && ledger[i].Anchor == anchor {
			return true
		}
	}
	return false
}

// loadSession reads the session with the store's timeout; a missing
// session is a new one.
func (e *Engine) loadSession(key state.Key) (*state.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.storeTimeout)
	defer cancel()
	sess, err := e.store.Get(ctx, key)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return &state.Session{ID: key.Session, Tenant: key.Tenant}, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errStoreUnavailable, err)
	}
	return sess, nil
}

func (t *Turn) warn(msg string, err error) {
	t.e.log.Warn(msg, zap.String("request_id", t.call.RequestID), zap.String("route", t.call.Route),
		zap.String("session", t.key.Session), zap.Error(err))
}

// hookFailed counts and logs the hooks that failed (err joins HookErrors).
func (t *Turn) hookFailed(err error) {
	for _, e := range unjoin(err) {
		var he *hooks.HookError
		name := "unknown"
		if errors.As(e, &he) {
			name = he.Hook
		}
		t.e.metrics.HookFailed(name)
	}
	t.e.log.Warn("hook failed; continuing without it", zap.String("request_id", t.call.RequestID),
		zap.String("route", t.call.Route), zap.Error(err))
}

// unjoin splits an errors.Join result into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// SentCopies says how the body Begin returned was made from the agent's:
// runs are spans of it copied verbatim from agent (rewrite.CopyRun). Both
// are nil when the codec does not know (or t is nil). The runs are the
// codec's: read them before the turn edits again (Run).
func (t *Turn) SentCopies() (agent []byte, runs []rewrite.CopyRun) {
	if t == nil {
		return nil, nil
	}
	cm, ok := t.codec.(rewrite.CopyMapper)
	if !ok {
		return nil, nil
	}
	if runs = cm.CopyRuns(t.body, t.sent); runs == nil {
		return nil, nil
	}
	return t.body, runs
}
