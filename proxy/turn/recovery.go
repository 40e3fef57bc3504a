package turn

import (
	"time"

	recoveryhook "github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Recovery results, for Metrics.Recovery.
const (
	Recovered = "recovered" // the last reply ended on its own
	Exhausted = "exhausted" // still cut after the last attempt
	Failed    = "failed"    // a continuation request failed
)

// recovery is the truncation-recovery state of one turn: the one place
// that knows whether the next reply continues the last, how many
// continuations were sent and how the turn's recovery ended.
type recovery struct {
	continuing bool // the next reply continues the last one
	attempts   int  // continuations sent
	truncated  bool // some reply of the turn was cut
	lastStop   conv.StopReason
	started    time.Time // when the first cut reply arrived
	ended      bool
}

// noteStop counts a reply cut by the output limit or the context window.
func (l *replyLoop) noteStop(stop conv.StopReason) {
	r := &l.recovery
	r.lastStop = stop
	var kind string
	switch stop {
	case conv.StopMaxTokens:
		kind = "max_tokens"
	case conv.StopContextWindow:
		kind = "context_window" // reported, never continued
	default:
		return
	}
	l.t.e.metrics.Truncated(l.t.call.Route, kind)
	if !r.truncated {
		r.truncated, r.started = true, l.t.e.now()
	}
}

// continueReply builds the continuation of cur, a reply cut by the output
// limit: the reply without its tool calls (text and thinking byte for byte)
// and, unless prefilling, the continue instruction, appended to the last
// request; with a raised limit after a cut tool call. A reply with no text
// to continue is retried as it was asked. The agent's copy keeps the reply
// without its calls, and the next reply runs on into its last text block.
func (l *replyLoop) continueReply(cur []byte, view *conv.Reply, c *conv.Continuation) (step, bool) {
	t := l.t
	if t.cc == nil {
		t.warn("building continuation failed", errNoContinuer)
		return step{}, false
	}
	var remove []int
	if c.DropCalls {
		remove = allCalls(view)
	}
	items, hasText, err := t.cc.ContinuationMessages(cur, c.Prefill)
	if err != nil {
		t.warn("building continuation failed", err)
		return step{}, false
	}
	follow := l.sent
	if hasText {
		if !c.Prefill {
			instr, err := t.cc.UserTextMessage(c.Instruction)
			if err != nil {
				t.warn("building continuation failed", err)
				return step{}, false
			}
			items = append(items, instr)
		}
		if follow, err = t.tc.AppendMessages(l.sent, items); err != nil {
			t.warn("building continuation failed", err)
			return step{}, false
		}
		edited, err := t.tc.EditReply(cur, remove, nil)
		if err == nil {
			err = l.mergeNext(edited)
		}
		if err != nil {
			t.warn("merging replies failed", err)
			return step{}, false
		}
		l.items = append(l.items, items...)
		l.recovery.continuing = true
	} else {
		// Nothing to continue (the limit cut the reply's only call): ask
		// again; the agent's copy and the model's history skip this reply.
		l.recovery.continuing = l.agentCopy != nil
	}
	if c.MaxOutputTokens > 0 {
		if follow, err = t.codec.ApplyEdits(follow, conv.RequestEdits{SetMaxOutputTokens: c.MaxOutputTokens}); err != nil {
			t.warn("raising the output limit failed", err)
			return step{}, false
		}
		t.call.OutputLimit = c.MaxOutputTokens
	}
	l.outcome.continued(view, remove, hasText)
	l.changed = true
	l.sent = follow
	l.recovery.attempts++
	t.call.Recoveries++
	return step{remove: remove, follow: follow, cont: true}, true
}

// cutCalls returns the tool calls of a reply still cut by the output limit
// after the last attempt that the agent would otherwise get: every call not
// already removed. Only with recovery on (the API has a continue codec and
// a chain the recovery hook: call.Recoveries counts its attempts).
func (l *replyLoop) cutCalls(view *conv.Reply, removed []int) []int {
	if l.t.cc == nil || !l.t.e.recovery || view.Stop != conv.StopMaxTokens {
		return nil
	}
	gone := map[int]bool{}
	for _, i := range removed {
		gone[i] = true
	}
	var out []int
	for _, c := range view.ToolCalls {
		if !gone[c.Index] {
			out = append(out, c.Index)
		}
	}
	return out
}

// withoutCalls is the model's history of a reply whose calls were cut.
func (l *replyLoop) withoutCalls(cur []byte) ([][]byte, error) {
	items, _, err := l.t.cc.ContinuationMessages(cur, false)
	return items, err
}

func allCalls(view *conv.Reply) []int {
	out := make([]int, len(view.ToolCalls))
	for i, c := range view.ToolCalls {
		out[i] = c.Index
	}
	return out
}

// countSent counts a request the engine sent upstream within the turn.
func (l *replyLoop) countSent(cont bool) {
	l.outcome.rounds++
	if cont {
		l.outcome.continuations++
		l.t.e.metrics.Continuation(l.t.call.Route)
		return
	}
	l.t.e.metrics.FollowUp(l.t.call.Route)
}

// endRecovery records, once per turn, how recovery went: metrics, and the
// session's counters (applied with the turn's other effects).
func (l *replyLoop) endRecovery(failed bool) {
	r := &l.recovery
	if r.ended || !r.truncated {
		return
	}
	r.ended = true
	if r.attempts == 0 {
		return // nothing was tried (recovery off, or a context-window stop)
	}
	result := Recovered
	switch {
	case failed:
		result = Failed
	case r.lastStop == conv.StopMaxTokens:
		result = Exhausted
	}
	l.t.e.metrics.Recovery(l.t.call.Route, result, l.t.e.now().Sub(r.started))
	l.t.effects = append(l.t.effects, recoveryhook.CountTurn(int64(r.attempts), result == Recovered))
}
