package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// turn is one request's run through the hook chain and the turn engine. It
// is created per request and is not safe for concurrent use.
//
// Request side (prepare): load the session, append the hooks' per-turn text
// to the newest user turn, replay the ledger so the model sees every earlier
// turn exactly as before, then apply the hooks' static edits.
//
// Reply side (finishJSON): run the reply hooks; answer the calls shepherd
// claims or refuses; when every call of a reply is answered by shepherd,
// continue the turn upstream and merge the follow-up into one reply for the
// agent; record what the agent's copy lacks in the ledger; save the session
// in one atomic update.
type turn struct {
	s   *Server
	x   *exchange
	ctx *fasthttp.RequestCtx // valid only while the handler runs (JSON path)
	// hctx is the context hooks run under: the request context on the JSON
	// path, a background context in a stream writer (which must not touch
	// the RequestCtx).
	hctx context.Context
	// tmpl carries the agent's request line and headers for follow-ups; on
	// the JSON path it is ctx.Request, in a stream writer a copy.
	tmpl      *fasthttp.Request
	chain     *hooks.Chain
	codec     rewrite.Codec
	tc        rewrite.TurnCodec
	key       state.Key
	view      *conv.Request // the agent's request
	agentBody []byte
	sent      []byte // what went upstream: the model's view
	entries   []state.LedgerEntry
	effects   []func(*state.Session)
	// base is the session as loaded (nil when new or unreadable): stores
	// that can (Redis) commit the turn against it in one round trip.
	base *state.Session
	// opening: the request has no session id and no model turn yet (see
	// sourceOpening). Its state is saved under the fingerprint of the
	// conversation continued by agentReply, the reply the agent got.
	opening    bool
	agentReply []byte
}

// errStoreUnavailable marks a session that could not be loaded; the request
// then passes through without hooks (fail-open).
var errStoreUnavailable = errors.New("proxy: state store unavailable")

// prepareTurn loads the session and builds the upstream body. It returns nil
// and the agent's body when the request must pass through untouched (state
// store down: fail-open), and short=true when a hook answered the request.
// When governance fails closed, a session that cannot be loaded does not
// pass through: the chain runs on an empty session marked unavailable, so
// intents refuses what it cannot vouch for.
func (s *Server) prepareTurn(ctx *fasthttp.RequestCtx, x *exchange, view *conv.Request, body []byte) (t *turn, out []byte, short bool) {
	key := state.Key{Tenant: x.call.Tenant, Session: x.call.SessionID}
	// An opening request's id is fresh, so the load finds nothing: the
	// conversation inherits no state. It is still a read, so that a store
	// that is down is noticed before anything is injected that could not
	// be saved (fail-open and fail-closed as for any request).
	opening := x.sessionSource == sourceOpening
	sess, err := s.loadSession(key)
	if err != nil {
		s.metrics.StoreError("get")
		if !s.features.failsClosed(x.route.api) {
			s.log.Warn("session state unavailable; passing through without hooks",
				zap.String("request_id", x.requestID), zap.String("session", key.Session), zap.Error(err))
			return nil, body, false
		}
		s.log.Warn("session state unavailable; governance fails closed for this request",
			zap.String("request_id", x.requestID), zap.String("session", key.Session), zap.Error(err))
		sess = &state.Session{ID: key.Session, Tenant: key.Tenant}
		x.call.StateUnavailable = true
	}
	t = &turn{s: s, x: x, ctx: ctx, hctx: ctx, tmpl: &ctx.Request, chain: s.features.chain(x.route.api), codec: x.codec, tc: x.codec, key: key, view: view, agentBody: body, opening: opening}
	x.call.Session = sess
	x.call.Request = view
	if sess.Version > 0 && !x.call.StateUnavailable {
		t.base = sess
	}

	edits, resp, herr := t.chain.RunRequest(ctx, &x.call, view)
	if herr != nil {
		s.hookFailed(x, herr)
	}
	if resp != nil {
		status := resp.Status
		if status == 0 {
			status = fasthttp.StatusBadRequest
		}
		writeErrorStatus(ctx, x.route.provider, status, resp.Message)
		s.finish(ctx, x, status)
		return nil, nil, true
	}
	if view.HasMaxOutputTokens {
		x.call.OutputLimit = view.MaxOutputTokens
	}
	if edits.SetMaxOutputTokens > 0 {
		x.call.OutputLimit = edits.SetMaxOutputTokens
	}
	out, err = t.build(sess, edits)
	if err != nil {
		// Fail open: the agent's own request goes upstream unchanged.
		s.hookFailed(x, &hooks.HookError{Hook: "turn_engine", Err: err})
		return nil, body, false
	}
	t.sent = out
	return t, out, false
}

// build applies, in an order that keeps positions valid: the fresh per-turn
// text at the newest user turn (recorded in the ledger under that turn's
// anchor), the ledger replay of earlier turns, and the static edits (tools,
// system, output limit) that may renumber messages.
func (t *turn) build(sess *state.Session, edits conv.RequestEdits) ([]byte, error) {
	anchors := conv.Anchors(t.view.Messages)
	texts := edits.AppendUserText
	edits.AppendUserText = nil
	var fresh *rewrite.UserTexts
	if target := lastUserTurn(t.view.Messages); target >= 0 && len(texts) > 0 {
		if !hasEntry(sess.Ledger, ledgerUserText, anchors[target]) {
			fresh = &rewrite.UserTexts{Pos: target, Texts: texts}
			t.entries = append(t.entries, state.LedgerEntry{
				Kind: ledgerUserText, Anchor: anchors[target], Data: mustJSON(userTextEntry{Texts: texts}),
			})
		}
		// Otherwise this turn was seen before (a retry): the replay below
		// re-applies the text the model saw then.
	}
	body, st, err := replayLedger(t.tc, t.agentBody, anchors, sess.Ledger, fresh)
	t.s.metrics.ledger.WithLabelValues("applied").Add(float64(st.applied))
	t.s.metrics.ledger.WithLabelValues("missed").Add(float64(st.missed))
	if err != nil {
		return nil, err
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

// loadSession reads the session with the store's own timeout; a missing
// session is a new one.
func (s *Server) loadSession(key state.Key) (*state.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.storeTimeout())
	defer cancel()
	sess, err := s.store.Get(ctx, key)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return &state.Session{ID: key.Session, Tenant: key.Tenant}, nil
	case err != nil:
		return nil, errors.Join(errStoreUnavailable, err)
	}
	return sess, nil
}

func (s *Server) storeTimeout() time.Duration {
	if d := s.cfg.State.Redis.Timeout; d > 0 && s.cfg.State.Backend == config.BackendRedis {
		return 5 * d
	}
	return time.Second
}

// finishJSON runs the reply side on a complete non-streaming reply and
// writes the agent's copy to the client. It owns upResp.
func (t *turn) finishJSON(upResp *fasthttp.Response) error {
	status := upResp.StatusCode()
	body, err := readAll(upResp)
	fasthttp.ReleaseResponse(upResp)
	if err != nil {
		return err
	}
	out := body
	if status == fasthttp.StatusOK {
		out = t.runReplies(body)
		t.agentReply = out
	}
	t.ctx.Response.SetBodyRaw(out)
	if key, ok := t.save(); ok && t.opening {
		t.ctx.Response.Header.Set(headerSession, key.Session)
	}
	return nil
}

// runReplies applies the reply hooks' decisions to reply, following up
// upstream while every call of the newest reply is answered by shepherd. It
// returns the agent's copy. On any failure it degrades to what it has: the
// original reply, or the replies merged so far.
func (t *turn) runReplies(reply []byte) []byte {
	l := t.newLoop()
	cur := reply
	for {
		st, ok := l.step(cur)
		if !ok {
			l.endRecovery(false)
			return l.fallback(cur)
		}
		if st.follow == nil {
			break
		}
		next, status, err := t.s.followUp(t.tmpl, t.x, st.follow)
		l.countFollowUp(st.cont)
		if err != nil || status != fasthttp.StatusOK {
			t.warn("follow-up upstream failed; the agent gets the reply so far", errors.Join(err, fmt.Errorf("status %d", status)))
			l.endRecovery(true)
			break
		}
		cur = next
	}
	l.endRecovery(false)
	if l.attempts > 0 && t.ctx != nil {
		t.ctx.Response.Header.Set(headerRecoveryAttempts, strconv.Itoa(l.attempts))
	}
	return l.finish(reply)
}

// replyLoop is the turn engine's bookkeeping over the replies of one turn:
// the agent's merged copy, the model's real sequence for the ledger, and the
// answers the agent never sees. The JSON and the streaming paths share it.
type replyLoop struct {
	t         *turn
	agentCopy []byte            // merged reply for the agent
	items     [][]byte          // the model's real sequence, for the ledger
	pending   []conv.ToolResult // shepherd's answers to calls of the last reply
	sent      []byte            // the latest request sent upstream
	changed   bool
	followups int // follow-ups sent after shepherd answered every call
	recoveryState
}

// stepResult is what one step decided.
type stepResult struct {
	// remove and first are the tool calls to drop from the agent's copy and
	// to move first (for a stream splicer's Release).
	remove, first []int
	// follow is the next request to send upstream, nil when the turn ends.
	follow []byte
	// cont reports that follow continues a truncated reply (the next reply
	// runs on in the same text block) rather than following up answered
	// calls.
	cont bool
}

func (t *turn) newLoop() *replyLoop {
	l := &replyLoop{t: t, sent: t.sent}
	l.cc, _ = rewrite.Continuer(t.codec)
	return l
}

// step runs the reply hooks on cur, the next complete reply of the turn,
// and folds it into the turn. It returns what to release to the agent and
// the next request upstream: a continuation when the reply was cut by the
// output limit and recovery asks for one, a follow-up when every call of cur
// was answered by shepherd. ok is false when cur could not be processed; the
// caller then degrades.
func (l *replyLoop) step(cur []byte) (stepResult, bool) {
	t := l.t
	view, err := t.codec.ParseReply(cur)
	if err != nil {
		t.warn("reply not parsable; passing it through", err)
		return stepResult{}, false
	}
	l.noteStop(view.Stop)
	d, herr := t.chain.RunReply(t.hctx, &t.x.call, view)
	if herr != nil {
		t.s.hookFailed(t.x, herr)
	}
	t.effects = append(t.effects, d.Effects...)
	if len(d.Effects) > 0 && t.x.call.Session != nil {
		// Later rounds of this turn see the state as this reply left it
		// (an intent selected here governs the follow-up's calls).
		sess := t.x.call.Session.Clone()
		for _, fx := range d.Effects {
			fx(sess)
		}
		t.x.call.Session = sess
	}
	if d.Continue != nil {
		return l.continueReply(cur, view, d.Continue)
	}
	remove, results := answered(view, d)
	msgItems, err := t.tc.ReplyAsMessages(cur)
	if err != nil {
		t.warn("reply not convertible", err)
		return stepResult{}, false
	}
	if cut := l.cutCalls(view, remove); cut != nil {
		// Still cut inside a tool call after the last attempt: the partial
		// call never reaches the agent, and the model's history keeps the
		// reply without it.
		remove = append(remove, cut...)
		if msgItems, err = l.withoutCalls(cur); err != nil {
			t.warn("reply not convertible", err)
			return stepResult{}, false
		}
	}
	first := moveFirst(view, d.MoveFirst, remove)
	edited, err := t.tc.EditReply(cur, remove, first)
	if err != nil {
		t.warn("editing reply failed", err)
		return stepResult{}, false
	}
	l.changed = l.changed || !bytes.Equal(edited, cur) || l.agentCopy != nil
	if err := l.mergeNext(edited); err != nil {
		t.warn("merging replies failed", err)
		return stepResult{}, false
	}
	l.items = append(l.items, msgItems...)
	t.s.metrics.answered.Add(float64(len(results)))
	allAnswered := len(results) > 0 && len(remove) == len(view.ToolCalls)
	if !allAnswered || l.followups >= t.s.maxFollowups {
		l.pending = results
		return stepResult{remove: remove, first: first}, true
	}
	resItems, err := t.tc.ToolResultMessages(results)
	var follow []byte
	if err == nil {
		follow, err = t.tc.AppendMessages(l.sent, append(append([][]byte{}, msgItems...), resItems...))
	}
	if err != nil {
		t.warn("building follow-up failed", err)
		l.pending = results
		return stepResult{remove: remove, first: first}, true
	}
	l.items = append(l.items, resItems...)
	l.sent = follow
	l.followups++
	return stepResult{remove: remove, first: first, follow: follow}, true
}

// mergeNext folds the agent's copy of the next reply into the turn's:
// appended after the previous reply, or run on into its last text block
// when the previous reply was continued.
func (l *replyLoop) mergeNext(edited []byte) error {
	defer func() { l.continuing = false }()
	switch {
	case l.agentCopy == nil:
		l.agentCopy = edited
		return nil
	case l.continuing:
		merged, err := l.cc.ContinueReply(l.agentCopy, edited)
		if err != nil {
			return err
		}
		l.agentCopy = merged
		return nil
	}
	merged, err := l.t.tc.MergeReplies(l.agentCopy, edited)
	if err != nil {
		return err
	}
	l.agentCopy = merged
	return nil
}

// fallback is what the agent gets when a reply could not be processed.
func (l *replyLoop) fallback(cur []byte) []byte {
	if l.agentCopy != nil {
		return l.agentCopy
	}
	return cur
}

// finish records the turn in the ledger when the agent's copy differs from
// the model's and returns the agent's copy (original when unchanged).
func (l *replyLoop) finish(original []byte) []byte {
	if l.agentCopy != nil {
		l.t.agentReply = l.agentCopy
	}
	if !l.changed && len(l.pending) == 0 {
		return original
	}
	l.t.recordTurn(l.agentCopy, l.items, l.pending)
	return l.agentCopy
}

// recordTurn adds the ledger entry that restores the model's view of this
// turn when the agent sends its copy back.
func (t *turn) recordTurn(agentCopy []byte, items [][]byte, pending []conv.ToolResult) {
	agentItems, err := t.tc.ReplyAsMessages(agentCopy)
	if err != nil {
		t.warn("recording turn failed", err)
		return
	}
	withAgent, err := t.tc.AppendMessages(t.agentBody, agentItems)
	if err != nil {
		t.warn("recording turn failed", err)
		return
	}
	av, err := t.codec.ParseRequest(withAgent)
	if err != nil || len(av.Messages) <= len(t.view.Messages) {
		t.warn("recording turn failed", err)
		return
	}
	withModel, err := t.tc.AppendMessages(t.agentBody, items)
	if err != nil {
		t.warn("recording turn failed", err)
		return
	}
	mv, err := t.codec.ParseRequest(withModel)
	if err != nil {
		t.warn("recording turn failed", err)
		return
	}
	raw := make([]string, len(items))
	for i := range items {
		raw[i] = string(items[i])
	}
	t.entries = append(t.entries, state.LedgerEntry{
		Kind:   ledgerTurn,
		Anchor: conv.Anchors(av.Messages)[len(t.view.Messages)],
		Data:   mustJSON(turnEntry{Items: raw, Tail: len(mv.Messages) - len(t.view.Messages), Results: pending}),
	})
}

// baseUpdater is a store that can commit an update against the session as
// it was read, saving the read (state.Redis).
type baseUpdater interface {
	UpdateFrom(ctx context.Context, key state.Key, base *state.Session, fn func(*state.Session) error) (*state.Session, error)
}

// save applies the turn's effects and ledger entries in one atomic update:
// with Redis, one round trip (a compare-and-set against the session loaded
// at the start of the request, falling back to read-modify-write if another
// request changed it meanwhile). It returns the key saved under and whether
// anything was saved.
//
// An opening request (no session id, no model turn yet) is saved under the
// fingerprint of its continuation, the conversation with the reply the
// agent got appended: only the request that sends that reply back finds
// it. Without a reply (the upstream failed, the client went away) there is
// nothing to continue and nothing is saved. A side request that changed
// nothing leaves the session alone.
func (t *turn) save() (state.Key, bool) {
	side := t.x.call.Side != ""
	if side && len(t.effects) == 0 && len(t.entries) == 0 {
		return t.key, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.s.storeTimeout())
	defer cancel()
	// An opening request's base is nil (its fresh id was never stored), so
	// the continuation is created by one compare-and-set, as any new
	// session is.
	key := t.key
	if t.opening {
		var err error
		if key, err = t.continuationKey(); err != nil {
			t.warn("no session for the continuation of this conversation; its state is not kept", err)
			return key, false
		}
	}
	fn := func(s *state.Session) error {
		if !side {
			s.Requests++
		}
		for _, fx := range t.effects {
			fx(s)
		}
		appendLedger(s, t.entries)
		return nil
	}
	var err error
	if u, ok := t.s.store.(baseUpdater); ok && !t.x.call.StateUnavailable {
		_, err = u.UpdateFrom(ctx, key, t.base, fn)
	} else {
		_, err = t.s.store.Update(ctx, key, fn)
	}
	if err != nil {
		t.s.metrics.StoreError("update")
		t.warn("saving session failed; the next request may not replay this turn", err)
		return key, false
	}
	return key, true
}

// errNoContinuation: an opening request ended without a reply for the
// agent, or its continuation has no fingerprint.
var errNoContinuation = errors.New("proxy: no reply to continue the conversation from")

// continuationKey is the session key of the conversation an opening
// request continues into: its fingerprint with the agent's copy of the
// reply appended, which is what the agent's next request carries.
func (t *turn) continuationKey() (state.Key, error) {
	if t.agentReply == nil {
		return state.Key{}, errNoContinuation
	}
	items, err := t.tc.ReplyAsMessages(t.agentReply)
	if err != nil {
		return state.Key{}, fmt.Errorf("proxy: reading the reply: %w", err)
	}
	next, err := t.tc.AppendMessages(t.agentBody, items)
	if err != nil {
		return state.Key{}, fmt.Errorf("proxy: appending the reply: %w", err)
	}
	fp := rewrite.RequestFingerprint(t.codec, next)
	if fp == "" {
		return state.Key{}, errNoContinuation
	}
	return state.Key{Tenant: t.key.Tenant, Session: fingerprintSessionID(fp)}, nil
}

func (t *turn) warn(msg string, err error) {
	t.s.log.Warn(msg, zap.String("request_id", t.x.requestID), zap.String("route", t.x.route.name), zap.Error(err))
}

// answered lists the calls shepherd answers (claimed or refused) and their
// results, in reply order.
func answered(view *conv.Reply, d hooks.ReplyDecision) ([]int, []conv.ToolResult) {
	byIndex := map[int]conv.CallDecision{}
	for _, cd := range d.Calls {
		if cd.Verdict != conv.Pass {
			byIndex[cd.CallIndex] = cd
		}
	}
	var remove []int
	var results []conv.ToolResult
	for _, c := range view.ToolCalls {
		cd, ok := byIndex[c.Index]
		if !ok {
			continue
		}
		remove = append(remove, c.Index)
		results = append(results, conv.ToolResult{
			CallID: c.ID, Name: c.Name, Content: cd.Result, IsError: cd.Verdict == conv.Refuse,
			Freeform: c.Freeform,
		})
	}
	return remove, results
}

// moveFirst keeps the MoveFirst indices that stay in the agent's copy and
// are not already in front.
func moveFirst(view *conv.Reply, first, remove []int) []int {
	gone := map[int]bool{}
	for _, i := range remove {
		gone[i] = true
	}
	var keep []int
	seen := map[int]bool{}
	for _, i := range first {
		if !gone[i] && !seen[i] && i >= 0 && i < len(view.ToolCalls) {
			keep = append(keep, i)
			seen[i] = true
		}
	}
	// Already in order at the front: nothing to move.
	pos := 0
	for _, c := range view.ToolCalls {
		if gone[c.Index] {
			continue
		}
		if pos < len(keep) && keep[pos] == c.Index {
			pos++
			continue
		}
		break
	}
	if pos == len(keep) {
		return nil
	}
	return keep
}

// followUp sends a follow-up request upstream with the agent's request line
// and headers (tmpl) and returns the complete reply body.
func (s *Server) followUp(tmpl *fasthttp.Request, x *exchange, body []byte) ([]byte, int, error) {
	resp, err := s.sendFollowUp(tmpl, x, body)
	if err != nil {
		return nil, 0, err
	}
	defer fasthttp.ReleaseResponse(resp)
	b, err := readAll(resp)
	return b, resp.StatusCode(), err
}

// sendFollowUp sends body upstream and returns the response with its body
// not yet read (streamed). The caller releases it.
func (s *Server) sendFollowUp(tmpl *fasthttp.Request, x *exchange, body []byte) (*fasthttp.Response, error) {
	up := s.upstreams[x.route.provider]
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	prepareUpstreamRequest(req, tmpl, up, body, true)
	setWatchedBody(req, resp, body, x.watch)
	t0 := time.Now()
	err := up.client.DoTimeout(req, resp, s.cfg.Limits.UpstreamTimeout)
	x.upWait += time.Since(t0)
	if err == nil {
		x.watch.received(resp, "")
	} else {
		x.watch.received(nil, phaseWaitingUpstream)
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		return nil, classifyUpstreamError(err)
	}
	return resp, nil
}

// readAll reads a (possibly streamed) upstream body completely.
func readAll(resp *fasthttp.Response) ([]byte, error) {
	bs := resp.BodyStream()
	if bs == nil {
		return append([]byte(nil), resp.Body()...), nil
	}
	b, err := io.ReadAll(bs)
	if cerr := resp.CloseBodyStream(); err == nil {
		err = cerr
	}
	return b, err
}
