package proxy

import (
	"time"

	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// headerRecoveryAttempts reports, on a non-streaming reply, how many
// continuations truncation recovery made for it.
const headerRecoveryAttempts = "X-Shepherd-Recovery-Attempts"

// Recovery results, for shepherd_recoveries_total.
const (
	recoveryRecovered = "recovered" // the last reply ended on its own
	recoveryExhausted = "exhausted" // still cut after the last attempt
	recoveryFailed    = "failed"    // a continuation request failed
)

// recoveryState is the truncation-recovery part of a replyLoop.
type recoveryState struct {
	cc         rewrite.ContinueCodec // nil: the API has no recovery
	continuing bool                  // the next reply continues the last one
	attempts   int                   // continuations sent
	truncated  bool                  // some reply of the turn was cut
	lastStop   conv.StopReason
	started    time.Time // when the first cut reply arrived
	ended      bool
}

// noteStop counts a reply cut by the output limit or the context window.
func (l *replyLoop) noteStop(stop conv.StopReason) {
	l.lastStop = stop
	var kind string
	switch stop {
	case conv.StopMaxTokens:
		kind = "max_tokens"
	case conv.StopContextWindow:
		kind = "context_window" // reported, never continued
	default:
		return
	}
	l.t.s.metrics.truncations.WithLabelValues(l.t.x.route.name, kind).Inc()
	if !l.truncated {
		l.truncated, l.started = true, time.Now()
	}
}

// continueReply builds the continuation of cur, a reply cut by the output
// limit: the reply without its tool calls (text and thinking byte for byte)
// and, unless prefilling, the continue instruction, appended to the last
// request; with a raised limit after a cut tool call. A reply with no text
// to continue is retried as it was asked. The agent's copy keeps the reply
// without its calls, and the next reply runs on into its last text block.
func (l *replyLoop) continueReply(cur []byte, view *conv.Reply, c *conv.Continuation) (stepResult, bool) {
	t := l.t
	var remove []int
	if c.DropCalls {
		remove = allCalls(view)
	}
	items, hasText, err := l.cc.ContinuationMessages(cur, c.Prefill)
	if err != nil {
		t.warn("building continuation failed", err)
		return stepResult{}, false
	}
	follow := l.sent
	if hasText {
		if !c.Prefill {
			instr, err := l.cc.UserTextMessage(c.Instruction)
			if err != nil {
				t.warn("building continuation failed", err)
				return stepResult{}, false
			}
			items = append(items, instr)
		}
		if follow, err = t.tc.AppendMessages(l.sent, items); err != nil {
			t.warn("building continuation failed", err)
			return stepResult{}, false
		}
		edited, err := t.tc.EditReply(cur, remove, nil)
		if err == nil {
			err = l.mergeNext(edited)
		}
		if err != nil {
			t.warn("merging replies failed", err)
			return stepResult{}, false
		}
		l.items = append(l.items, items...)
		l.continuing = true
	} else {
		// Nothing to continue (the limit cut the reply's only call): ask
		// again; the agent's copy and the model's history skip this reply.
		l.continuing = l.agentCopy != nil
	}
	if c.MaxOutputTokens > 0 {
		if follow, err = t.codec.ApplyEdits(follow, conv.RequestEdits{SetMaxOutputTokens: c.MaxOutputTokens}); err != nil {
			t.warn("raising the output limit failed", err)
			return stepResult{}, false
		}
		t.x.call.OutputLimit = c.MaxOutputTokens
	}
	l.changed = true
	l.sent = follow
	l.attempts++
	t.x.call.Recoveries++
	return stepResult{remove: remove, follow: follow, cont: true}, true
}

// cutCalls returns the tool calls of a reply still cut by the output limit
// after the last attempt that the agent would otherwise get: every call not
// already removed. Only with recovery on (the API has a continue codec and
// the chain a recovery hook: call.Recoveries counts its attempts).
func (l *replyLoop) cutCalls(view *conv.Reply, removed []int) []int {
	if l.cc == nil || !l.t.s.recovery || view.Stop != conv.StopMaxTokens {
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
	items, _, err := l.cc.ContinuationMessages(cur, false)
	return items, err
}

func allCalls(view *conv.Reply) []int {
	out := make([]int, len(view.ToolCalls))
	for i, c := range view.ToolCalls {
		out[i] = c.Index
	}
	return out
}

// countFollowUp counts a request the engine sent upstream within the turn.
func (l *replyLoop) countFollowUp(cont bool) {
	m, route := l.t.s.metrics, l.t.x.route.name
	if cont {
		m.recoveryAttempts.WithLabelValues(route).Inc()
		return
	}
	m.followups.WithLabelValues(route).Inc()
}

// endRecovery records, once per turn, how recovery went: metrics, and the
// session's counters (applied with the turn's other effects).
func (l *replyLoop) endRecovery(failed bool) {
	if l.ended || !l.truncated {
		return
	}
	l.ended = true
	if l.attempts == 0 {
		return // nothing was tried (recovery off, or a context-window stop)
	}
	result := recoveryRecovered
	switch {
	case failed:
		result = recoveryFailed
	case l.lastStop == conv.StopMaxTokens:
		result = recoveryExhausted
	}
	m, route := l.t.s.metrics, l.t.x.route.name
	m.recoveries.WithLabelValues(route, result).Inc()
	m.recoveryAdded.WithLabelValues(route).Observe(time.Since(l.started).Seconds())
	attempts := int64(l.attempts)
	recovered := result == recoveryRecovered
	l.t.effects = append(l.t.effects, recovery.CountTurn(attempts, recovered))
}
