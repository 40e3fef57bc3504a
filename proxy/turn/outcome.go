package turn

import (
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// outcomeLog collects a turn's conv.TurnOutcome as the reply loop goes:
// each call's fate once decided, the usage of every round, the rounds per
// cause. A call that passed to the agent stays undelivered until the
// writer released it.
type outcomeLog struct {
	ran           bool // the reply chain ran on some reply
	rounds        int  // upstream requests made (the agent's, then one per send)
	continuations int
	calls         []conv.Outcome
	awaiting      []int // indices in calls of passed calls not yet released
	usage         conv.Usage
	model         string // the model of the latest reply that names one
	stop          conv.StopReason
}

// reply notes a reply about to be decided.
func (o *outcomeLog) reply(view *conv.Reply) {
	o.ran = true
	o.usage.InputTokens += view.Usage.InputTokens
	o.usage.OutputTokens += view.Usage.OutputTokens
	o.usage.CacheReadTokens += view.Usage.CacheReadTokens
	o.usage.CacheWriteTokens += view.Usage.CacheWriteTokens
	if view.Model != "" {
		o.model = view.Model
	}
	o.stop = view.Stop
}

func (o *outcomeLog) add(c conv.ToolCall, fate conv.Fate, hook, result string) {
	o.addRule(c, fate, hook, result, "")
}

func (o *outcomeLog) addRule(c conv.ToolCall, fate conv.Fate, hook, result, rule string) {
	if fate == conv.FateUndelivered {
		o.awaiting = append(o.awaiting, len(o.calls))
	}
	o.calls = append(o.calls, conv.Outcome{Round: o.rounds - 1, Call: c, Fate: fate, Hook: hook, Result: result, Rule: rule})
}

// decided notes the fate of every call of a reply the hooks decided on:
// claimed or refused by a hook, dropped when cut by the output limit,
// otherwise on its way to the agent.
func (o *outcomeLog) decided(view *conv.Reply, d hooks.ReplyDecision, cut []int) {
	byIndex := map[int]conv.CallDecision{}
	for _, cd := range d.Calls {
		if cd.Verdict != conv.Pass {
			byIndex[cd.CallIndex] = cd
		}
	}
	dropped := indexSet(cut)
	for _, c := range view.ToolCalls {
		cd, ok := byIndex[c.Index]
		switch {
		case ok && cd.Verdict == conv.Claim:
			o.add(c, conv.FateClaimed, cd.Hook, cd.Result)
		case ok && cd.Verdict == conv.Refuse:
			o.addRule(c, conv.FateRefused, cd.Hook, cd.Result, cd.Rule)
		case dropped[c.Index]:
			o.add(c, conv.FateDropped, "", "")
		default:
			o.add(c, conv.FateUndelivered, "", "")
		}
	}
}

// continued notes the calls of a reply cut by the output limit and
// continued: those removed (or all, when the reply had no text to continue
// and is asked again) are dropped, the rest go on to the agent.
func (o *outcomeLog) continued(view *conv.Reply, remove []int, hasText bool) {
	gone := indexSet(remove)
	for _, c := range view.ToolCalls {
		if gone[c.Index] || !hasText {
			o.add(c, conv.FateDropped, "", "")
			continue
		}
		o.add(c, conv.FateUndelivered, "", "")
	}
}

// released notes that the writer handed the agent every call passed so far.
func (o *outcomeLog) released() {
	for _, i := range o.awaiting {
		o.calls[i].Fate = conv.FateDelivered
	}
	o.awaiting = o.awaiting[:0]
}

// result fills out with the turn's outcome; err is why it failed (nil
// when the agent got its reply).
func (o *outcomeLog) result(out *conv.TurnOutcome, err error) {
	*out = conv.TurnOutcome{
		Calls: o.calls, Stop: o.stop, Rounds: o.rounds, Continuations: o.continuations,
		Usage: o.usage, Err: err,
	}
	if err != nil {
		out.Stop = conv.StopNone
	}
}

func indexSet(idx []int) map[int]bool {
	m := make(map[int]bool, len(idx))
	for _, i := range idx {
		m[i] = true
	}
	return m
}
