package turn

import (
	"bytes"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// replyLoop is the turn engine's bookkeeping over the replies of one turn:
// the agent's merged copy, the model's real sequence for the ledger, the
// answers the agent never sees, the rounds per cause, recovery, and the
// outcome.
type replyLoop struct {
	t         *Turn
	agentCopy []byte   // merged reply for the agent
	items     [][]byte // the model's real sequence, for the ledger
	// last is the turn's final reply when its messages are not rendered
	// onto items yet (finish renders them if the turn is recorded); nil:
	// none. Only a step that sends nothing more upstream sets it, so no
	// later step appends to items after it.
	last    []byte
	pending []conv.ToolResult // shepherd's answers to calls of the last reply
	sent    []byte            // the latest request sent upstream
	changed bool
	// followups and refusalRounds count the follow-ups sent after shepherd
	// answered every call of a reply: all claimed, or some refused.
	followups     int
	refusalRounds int
	recovery      recovery
	outcome       outcomeLog
	// w is the turn's writer (kept alive while calls are held); gone is
	// set when the agent left while they were (the turn then aborts).
	w    Writer
	gone error
}

// step is what one reply decided.
type step struct {
	// remove and first are the tool calls to drop from the agent's copy and
	// to move first (Writer.Release).
	remove, first []int
	// follow is the next request to send upstream, nil when the turn ends.
	follow []byte
	// cont reports that follow continues a truncated reply (the next reply
	// runs on in the same text block) rather than following up answered
	// calls.
	cont bool
}

// step runs the reply hooks on cur, the next complete reply of the turn,
// and folds it into the turn. It returns what to release to the agent and
// the next request upstream: a continuation when the reply was cut by the
// output limit and recovery asks for one, a follow-up when every call of cur
// was answered by shepherd and the bound of its cause allows. ok is false
// when cur could not be processed; the caller then degrades.
func (l *replyLoop) step(cur []byte) (step, bool) {
	t := l.t
	view, err := t.parseReply(cur)
	if err != nil {
		t.warn("reply not parsable; passing it through", err)
		return step{}, false
	}
	l.outcome.reply(view)
	l.noteStop(view.Stop)
	t.watch.reply(view)
	if t.trace != nil {
		t.trace.RoundReplied(view)
		t.trace.HookPhaseStarted(PhaseReply)
	}
	d, herr := t.chain.RunReply(t.ctx, &t.call, view)
	if t.trace != nil {
		t.trace.HookPhaseEnded(PhaseReply, herr)
	}
	if herr != nil {
		t.hookFailed(herr)
	}
	t.accept(d.Effects)
	if d.Continue != nil {
		return l.continueReply(cur, view, d.Continue)
	}
	if d, err = l.holdCalls(view, d); err != nil {
		l.gone = err
		return step{}, false
	}
	remove, results := answered(view, d)
	// Still cut inside a tool call after the last attempt: the partial call
	// never reaches the agent, and the model's history keeps the reply
	// without it.
	cut := l.cutCalls(view, remove)
	remove = append(remove, cut...)
	allAnswered := len(results) > 0 && len(remove) == len(view.ToolCalls)
	refused := anyRefused(results)
	follows := allAnswered && l.mayFollowUp(refused)
	// The model's history of cur is rendered now only when it is needed
	// now (a follow-up carries it, or the calls were cut); otherwise it is
	// rendered by finish, and only if the turn is recorded at all (most
	// turns change nothing and are not).
	var msgItems [][]byte
	switch {
	case cut != nil:
		msgItems, err = l.withoutCalls(cur)
	case follows:
		msgItems, err = t.tc.ReplyAsMessages(cur)
	}
	if err != nil {
		t.warn("reply not convertible", err)
		return step{}, false
	}
	first := moveFirst(view, d.MoveFirst, remove)
	edited, err := t.tc.EditReply(cur, remove, first)
	if err != nil {
		t.warn("editing reply failed", err)
		return step{}, false
	}
	l.changed = l.changed || !bytes.Equal(edited, cur) || l.agentCopy != nil
	if err := l.mergeNext(edited); err != nil {
		t.warn("merging replies failed", err)
		return step{}, false
	}
	l.outcome.decided(view, d, cut)
	if cut == nil && !follows {
		l.last = cur
	} else {
		l.items = append(l.items, msgItems...)
	}
	t.e.metrics.CallsAnswered(len(results))
	if !follows {
		l.pending = results
		return step{remove: remove, first: first}, true
	}
	resItems, err := t.tc.ToolResultMessages(results)
	var follow []byte
	if err == nil {
		follow, err = t.tc.AppendMessages(l.sent, append(append([][]byte{}, msgItems...), resItems...))
	}
	if err != nil {
		t.warn("building follow-up failed", err)
		l.pending = results
		return step{remove: remove, first: first}, true
	}
	l.items = append(l.items, resItems...)
	l.sent = follow
	if refused {
		l.refusalRounds++
	} else {
		l.followups++
	}
	return step{remove: remove, first: first, follow: follow}, true
}

// parseReply views cur, without its text when no hook reads it (the codec
// permitting).
func (t *Turn) parseReply(cur []byte) (*conv.Reply, error) {
	if rc, ok := t.codec.(rewrite.ReplyCallsParser); ok && !t.chain.ReadsReplyText() {
		return rc.ParseReplyCalls(cur)
	}
	return t.codec.ParseReply(cur)
}

// mayFollowUp reports whether the bound of the cause allows one more
// follow-up: refusal rounds when shepherd refused a call of the reply,
// follow-ups when it claimed them all.
func (l *replyLoop) mayFollowUp(refused bool) bool {
	if refused {
		return l.refusalRounds < l.t.e.limits.MaxRefusalRounds
	}
	return l.followups < l.t.e.limits.MaxFollowups
}

func anyRefused(results []conv.ToolResult) bool {
	for _, r := range results {
		if r.IsError {
			return true
		}
	}
	return false
}

// mergeNext folds the agent's copy of the next reply into the turn's:
// appended after the previous reply, or run on into its last text block
// when the previous reply was continued.
func (l *replyLoop) mergeNext(edited []byte) error {
	defer func() { l.recovery.continuing = false }()
	switch {
	case l.agentCopy == nil:
		l.agentCopy = edited
		return nil
	case l.recovery.continuing:
		merged, err := l.t.cc.ContinueReply(l.agentCopy, edited)
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
	if !l.changed && len(l.pending) == 0 {
		return original
	}
	if err := l.convertLast(); err != nil {
		l.t.warn("recording turn failed", err)
		return l.agentCopy
	}
	l.t.recordTurn(l.agentCopy, l.items, l.pending)
	return l.agentCopy
}

// convertLast renders the model's history of the reply kept in last, if
// any, onto items.
func (l *replyLoop) convertLast() error {
	if l.last == nil {
		return nil
	}
	items, err := l.t.tc.ReplyAsMessages(l.last)
	l.last = nil
	if err != nil {
		return err
	}
	l.items = append(l.items, items...)
	return nil
}

// recordTurn adds the ledger entry that restores the model's view of this
// turn when the agent sends its copy back.
func (t *Turn) recordTurn(agentCopy []byte, items [][]byte, pending []conv.ToolResult) {
	agentItems, err := t.tc.ReplyAsMessages(agentCopy)
	if err != nil {
		t.warn("recording turn failed", err)
		return
	}
	withAgent, err := t.tc.AppendMessages(t.body, agentItems)
	if err != nil {
		t.warn("recording turn failed", err)
		return
	}
	av, err := t.codec.ParseRequest(withAgent)
	if err != nil || len(av.Messages) <= len(t.view.Messages) {
		t.warn("recording turn failed", err)
		return
	}
	withModel, err := t.tc.AppendMessages(t.body, items)
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
	anchors := conv.Anchors(av.Messages)
	t.entries = append(t.entries, state.LedgerEntry{
		Kind:   kindTurn,
		Anchor: anchors[len(t.view.Messages)],
		Root:   rootAnchor(anchors),
		At:     len(t.view.Messages) + 1,
		Data:   encodeRecord(turnRecord{V: recordVersion, Items: raw, Tail: len(mv.Messages) - len(t.view.Messages), Results: pending}),
	})
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
