package turn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Holds time the calls a reply hook holds for a person's approval
// (conv.Hold). Zero fields take DefaultHolds' values.
type Holds struct {
	// Timeout is how long a held call waits for a decision; past it the
	// call is refused with ReasonNotApproved.
	Timeout time.Duration
	// Poll is how often the approval is read from the store (a decision
	// may be recorded on any replica).
	Poll time.Duration
	// KeepAlive is how often the Writer's KeepAlive runs while waiting.
	KeepAlive time.Duration
}

// DefaultHolds are the defaults of Holds (intents.approval_timeout,
// approval_poll, keepalive).
var DefaultHolds = Holds{Timeout: 2 * time.Minute, Poll: 500 * time.Millisecond, KeepAlive: 15 * time.Second}

func (h Holds) withDefaults() Holds {
	if h.Timeout <= 0 {
		h.Timeout = DefaultHolds.Timeout
	}
	if h.Poll <= 0 {
		h.Poll = DefaultHolds.Poll
	}
	if h.KeepAlive <= 0 {
		h.KeepAlive = DefaultHolds.KeepAlive
	}
	return h
}

// What the model is told about a held call that does not pass.
const (
	// ReasonNotApproved: no one decided before the approval expired.
	ReasonNotApproved = "not approved in time"
	// ReasonDenied: a person denied the call.
	ReasonDenied = "denied by a person"
	// ByTimeout is Approval.By of an approval that expired; ByShepherd of
	// one denied because the agent left while its call was held.
	ByTimeout  = state.ApprovalByTimeout
	ByShepherd = "shepherd"
)

// maxHeldArgs bounds the arguments an approval and its call.held event
// carry (the approval id covers all of them).
const maxHeldArgs = 2 << 10

// ApprovalID is the id of the approval of one tool call: the hex of a hash
// of the session id, the call's id, its tool and its arguments, so a
// decision is bound to that exact call.
func ApprovalID(session, callID, tool string, args []byte) string {
	h := sha256.New()
	for _, s := range []string{session, callID, tool} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	h.Write(args)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// held is one call waiting for its approval.
type held struct {
	at   int // index in the decision's Calls
	call conv.ToolCall
	a    state.Approval // as held, then as decided
	done bool
}

// holdCalls resolves the calls d holds (conv.Hold): each is stored as a
// pending approval and reported (call.held), then the turn waits, keeping
// the agent's connection alive, until every one is approved (it passes),
// denied or expired (it is refused, the model told why). It returns d with
// no Hold left, or an error wrapping ErrClientGone when the agent left
// while waiting (the pending approvals are then denied).
func (l *replyLoop) holdCalls(view *conv.Reply, d hooks.ReplyDecision) (hooks.ReplyDecision, error) {
	t := l.t
	byIndex := map[int]conv.ToolCall{}
	for _, c := range view.ToolCalls {
		byIndex[c.Index] = c
	}
	var hs []*held
	for i, cd := range d.Calls {
		if cd.Verdict == conv.Hold {
			hs = append(hs, &held{at: i, call: byIndex[cd.CallIndex]})
		}
	}
	if len(hs) == 0 {
		return d, nil
	}
	store := t.e.approvals
	if store == nil {
		for _, h := range hs {
			refuse(&d.Calls[h.at], "Tool call refused: it needs a person's approval, and this proxy keeps no approvals. "+d.Calls[h.at].Result)
		}
		return d, nil
	}
	key := state.Key{Tenant: t.call.Tenant, Session: t.call.SessionID}
	now := t.e.now()
	expires := now.Add(t.e.holds.Timeout)
	waiting := hs[:0:0]
	for _, h := range hs {
		cd := d.Calls[h.at]
		h.a = state.Approval{
			ID: ApprovalID(key.Session, h.call.ID, h.call.Name, h.call.Args), Session: key.Session, Tenant: key.Tenant,
			CallID: h.call.ID, Tool: h.call.Name, Args: cutArgs(h.call.Args),
			Intent: t.call.Session.Note("intents"), Reason: cd.Result, Rule: cd.Rule,
			HeldAt: now, ExpiresAt: expires,
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.e.storeTimeout)
		err := store.HoldApproval(ctx, key, h.a)
		cancel()
		if err != nil {
			t.e.metrics.StoreError("hold")
			t.warn("holding a call for approval failed; refusing it", err)
			refuse(&d.Calls[h.at], "Tool call refused: it needs a person's approval, and shepherd could not hold it for one (the state store is unavailable).")
			continue
		}
		t.emit(events.CallHeld, map[string]any{
			"approval": h.a.ID, "tool": h.a.Tool, "call_id": h.a.CallID, "args": h.a.Args, "intent": h.a.Intent,
			"reason": h.a.Reason, "rule": h.a.Rule, "expires_at": expires,
		})
		waiting = append(waiting, h)
	}
	err := l.waitHolds(key, waiting)
	for _, h := range waiting {
		if !h.done {
			continue
		}
		t.emitDecided(h.a)
		cd := &d.Calls[h.at]
		switch {
		case h.a.Decision == state.ApprovalApproved:
			cd.Verdict, cd.Result = conv.Pass, ""
		case h.a.By == ByTimeout:
			refuse(cd, "Tool call refused: "+ReasonNotApproved+" (it was held "+t.e.holds.Timeout.String()+" for a person's approval).")
		default:
			msg := "Tool call refused: " + ReasonDenied + "."
			if h.a.Note != "" {
				msg += " Their note: " + h.a.Note
			}
			refuse(cd, msg)
		}
	}
	return d, err
}

func refuse(cd *conv.CallDecision, result string) {
	cd.Verdict, cd.Result = conv.Refuse, result
}

// waitHolds waits until every call of hs is decided or expired, polling
// the store and keeping the agent's connection alive. It returns an error
// wrapping ErrClientGone when the agent left (the pending approvals are
// then denied by shepherd).
func (l *replyLoop) waitHolds(key state.Key, hs []*held) error {
	if len(hs) == 0 {
		return nil
	}
	t := l.t
	poll := time.NewTicker(t.e.holds.Poll)
	defer poll.Stop()
	keep := time.NewTicker(t.e.holds.KeepAlive)
	defer keep.Stop()
	// The holder records the timeout itself at ExpiresAt (the store takes
	// that denial however late the timer fires), so the approval shows who
	// ended it; of that and a person's last-moment decision one wins.
	deadline := time.NewTimer(hs[0].a.ExpiresAt.Sub(t.e.now()))
	defer deadline.Stop()
	var done <-chan struct{}
	if t.ctx != nil {
		done = t.ctx.Done()
	}
	for {
		select {
		case <-done:
			l.settle(key, hs, ByShepherd, "the turn ended while the call was held")
			return fmt.Errorf("%w: %w", ErrClientGone, context.Cause(t.ctx))
		case <-keep.C:
			if err := l.w.KeepAlive(); err != nil {
				l.settle(key, hs, ByShepherd, "the agent's connection closed while the call was held")
				if !errors.Is(err, ErrClientGone) {
					err = fmt.Errorf("%w: %w", ErrClientGone, err)
				}
				return err
			}
		case <-poll.C:
			if l.pollHolds(key, hs) {
				return nil
			}
		case <-deadline.C:
			// A decision made meanwhile wins over the timeout (settle
			// reads it).
			l.settle(key, hs, ByTimeout, ReasonNotApproved)
			return nil
		}
	}
}

// pollHolds reads the approvals still pending; true when none is left.
func (l *replyLoop) pollHolds(key state.Key, hs []*held) bool {
	t := l.t
	left := 0
	for _, h := range hs {
		if h.done {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.e.storeTimeout)
		a, err := t.e.approvals.GetApproval(ctx, key, h.a.ID)
		cancel()
		switch {
		case errors.Is(err, state.ErrNotFound):
			// Dropped from the store (flushed): no one can decide it now.
			h.a.Decision, h.a.By, h.a.Note, h.done = state.ApprovalDenied, ByShepherd, "the approval was lost from the state store", true
		case err != nil:
			t.e.metrics.StoreError("get_approval")
			left++
		case a.Decision != state.ApprovalPending:
			h.a, h.done = a, true
		default:
			left++
		}
	}
	return left == 0
}

// settle denies every approval of hs still pending, by by with note; a
// decision recorded meanwhile (ErrDecided) is read and kept when it is one.
func (l *replyLoop) settle(key state.Key, hs []*held, by, note string) {
	t := l.t
	for _, h := range hs {
		if h.done {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.e.storeTimeout)
		a, err := t.e.approvals.DecideApproval(ctx, key, h.a.ID, state.ApprovalDenied, by, note)
		if errors.Is(err, state.ErrDecided) {
			if got, gerr := t.e.approvals.GetApproval(ctx, key, h.a.ID); gerr == nil && got.Decision != state.ApprovalPending {
				a, err = got, nil
			}
		}
		cancel()
		if err != nil {
			// Past its expiry (the store decides no more) or unreachable:
			// denied all the same.
			a = h.a
			a.Decision, a.By, a.Note, a.DecidedAt = state.ApprovalDenied, by, note, t.e.now()
		}
		h.a, h.done = a, true
	}
}

// emitDecided reports a held call's decision (call.approved, call.denied).
func (t *Turn) emitDecided(a state.Approval) {
	typ := events.CallDenied
	if a.Decision == state.ApprovalApproved {
		typ = events.CallApproved
	}
	t.emit(typ, map[string]any{"approval": a.ID, "tool": a.Tool, "call_id": a.CallID, "by": a.By, "note": a.Note})
}

// emit reports an event of the turn's session.
func (t *Turn) emit(typ events.Type, data map[string]any) {
	t.e.events.Emit(events.Event{
		Type: typ, At: t.e.now(), Session: t.call.SessionID, Tenant: t.call.Tenant,
		Route: t.call.Route, RequestID: t.call.RequestID, Data: data,
	})
}

// cutArgs is a call's arguments cut to maxHeldArgs bytes (at a character
// boundary, marked with "…").
func cutArgs(args []byte) string {
	if len(args) <= maxHeldArgs {
		return string(args)
	}
	n := maxHeldArgs
	for n > 0 && args[n]&0xC0 == 0x80 {
		n--
	}
	return string(args[:n]) + "…"
}
