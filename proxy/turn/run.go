package turn

import (
	"context"
	"errors"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// errProviderError marks a turn whose reply the provider ended with its own
// error event, which reached the agent as it was.
var errProviderError = errors.New("turn: the provider ended the reply with an error")

// errNoContinuer: a hook asked to continue a reply on an API without a
// continue codec.
var errNoContinuer = errors.New("turn: the API cannot continue a reply")

// Run serves the reply side of the turn, JSON or streamed alike: it reads
// each reply through w, decides it (reply hooks, claimed and refused calls,
// recovery), releases the agent's copy, sends the follow-up or
// continuation through up while one is due, then records the turn in the
// ledger, saves the session, ends the agent's reply and reports the
// outcome to the chain. ctx is the context the hooks run under.
//
// On a reply it cannot process Run degrades to what it has (the replies
// merged so far, or the reply as it came); on a failed follow-up the agent
// gets the replies so far. It returns an error only when the turn ended
// without a reply (the writer's error, or ErrClientGone); the session then
// still keeps what the turn changed.
func (t *Turn) Run(ctx context.Context, w Writer, up Sender) error {
	t.ctx = ctx
	defer t.releaseSent()
	// t.loop is zero (Run runs once per turn); it is set field by field, so
	// that no composite literal takes room in this frame.
	l := &t.loop
	l.t, l.sent, l.w = t, t.sent, w
	l.outcome.rounds = 1
	t.tally = &l.outcome
	t.watchCalls(w)
	// Run's own frame stays small: a streamed turn's goroutine waits in
	// w.Read for the stream's next bytes with Run, the splicer's loop and
	// the upstream reader's frames under it, and that chain fits the 4 KB
	// a goroutine's stack starts at only when no frame on it holds much.
	// Each round's decision runs in round, whose frame is gone by the next
	// Read (docs/architecture.md, detached streams).
	var first []byte
	for n := 0; ; n++ {
		cur, ok, err := w.Read()
		if err != nil {
			return t.abort(l, err)
		}
		if !ok {
			return t.pass(l, w, cur, n)
		}
		if n == 0 {
			first = cur
		}
		if done, err := t.round(l, w, up, first, cur); done {
			return err
		}
	}
}

// round decides cur, the next complete reply of the turn (first is the
// turn's first): it releases the reply's calls to the agent and sends the
// follow-up or continuation that is due, or ends the turn (done, with
// Run's result).
//
//go:noinline
func (t *Turn) round(l *replyLoop, w Writer, up Sender, first, cur []byte) (done bool, err error) {
	st, ok := l.step(cur)
	if l.gone != nil { // the agent left while a call was held
		return true, t.abort(l, l.gone)
	}
	if !ok {
		// Degrade: the agent gets the reply as it came after what was
		// merged so far.
		if err := w.Release(nil, nil); err != nil {
			return true, t.abort(l, err)
		}
		return true, t.end(l, w, first, l.fallback(cur))
	}
	if err := w.Release(st.remove, st.first); err != nil {
		return true, t.abort(l, err)
	}
	l.outcome.released()
	if st.follow == nil {
		return true, t.end(l, w, first, nil)
	}
	if t.trace != nil {
		t.trace.RoundSending(st.cont)
	}
	resp, err := up.Send(st.follow)
	t.lastSent = st.follow
	l.countSent(st.cont)
	if err == nil {
		err = w.Follow(resp, st.cont)
	}
	if errors.Is(err, ErrClientGone) {
		return true, t.abort(l, err)
	}
	if err != nil {
		t.warn("follow-up upstream failed; the agent gets the reply so far", err)
		l.endRecovery(true)
		return true, t.end(l, w, first, nil)
	}
	return false, nil
}

// end finishes a turn whose replies were decided: the ledger records what
// the agent's copy lacks, the session is saved, the writer ends the reply
// (the agent's copy, or fallback when a reply could not be processed) and
// the outcome is reported.
func (t *Turn) end(l *replyLoop, w Writer, first, fallback []byte) error {
	l.endRecovery(false)
	out := l.finish(first)
	if fallback != nil {
		out = fallback
	}
	t.agentReply = out
	// Save before the agent sees the end of the reply: an SDK returns at a
	// stream's terminal event and may send the next request at once, which
	// must find this turn's ledger entries.
	f := Final{Reply: out, Continuations: l.recovery.attempts}
	if key, saved := t.save(); saved && t.opening {
		f.Session = key.Session
		if t.trace != nil {
			t.trace.OpeningSaved(key.Session)
		}
	}
	w.Finish(f)
	t.report(l, nil)
	return nil
}

// releaseSent gives the body the turn sent upstream back to the codec that
// made it (rewrite.BodyReleaser) once Run is over: it was the request, and
// the base of follow-ups and continuations, which all went out before Run
// returns (a Sender returns once its request is written). A turn that never
// runs leaves its body to the collector.
func (t *Turn) releaseSent() {
	t.Settle() // the check reads the body
	if r, ok := t.codec.(rewrite.BodyReleaser); ok && t.sent != nil {
		r.ReleaseBody(t.sent)
	}
	t.sent = nil
	if t.held != nil { // the body was built in the memo entry's buffer
		t.e.history.put(historyMemoKey{key: t.key, member: t.prefixKey}, t.held)
		t.held = nil
	}
}

// pass ends a turn whose reply is not the model's to decide on: it reached
// (or reaches) the agent as it came. After a follow-up, the turn failed.
func (t *Turn) pass(l *replyLoop, w Writer, reply []byte, round int) error {
	t.save()
	w.Finish(Final{Reply: reply, Passed: true})
	var err error
	if round > 0 {
		err = errProviderError
	}
	t.report(l, err)
	return nil
}

// abort ends a turn that has no reply for the agent (client gone, stream
// broken): the session keeps what the turn changed.
func (t *Turn) abort(l *replyLoop, err error) error {
	t.save()
	t.report(l, err)
	return err
}

// report gives the chain the turn's outcome, once, when the reply chain
// ran.
func (t *Turn) report(l *replyLoop, err error) {
	if !l.outcome.ran {
		return
	}
	l.outcome.result(&t.outcome, err)
	t.outcome.CostUSD, _ = t.Cost() // usage.go: priced once, as the save priced it
	t.emitOutcome()
	if t.trace != nil {
		t.trace.HookPhaseStarted(PhaseOutcome)
	}
	herr := t.chain.RunOutcome(t.ctx, &t.call, &t.outcome)
	if t.trace != nil {
		t.trace.HookPhaseEnded(PhaseOutcome, herr)
	}
	if herr != nil {
		t.hookFailed(herr)
	}
}
