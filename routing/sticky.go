package routing

import "github.com/shepherd-proxy/shepherd/state"

// Lane is the part of a session a routing decision sticks to: the main
// conversation and the subagents' conversations each keep their own
// (a subagent rule must not be overridden by the main lane's choice).
// Side requests (titles, summaries, classifiers) are one-shot: they
// neither keep nor follow a decision, so Lane returns "".
func Lane(k Kind) string {
	switch k {
	case KindMain:
		return "main"
	case KindSubagent:
		return "subagent"
	}
	return ""
}

// Decision is the route a request takes.
type Decision struct {
	// Route is the model and upstream chosen (Route.Rule "" when no rule
	// matched: the requested model and the route's own provider).
	Route state.Route
	// Rule is the rule that matched (nil: none), even when a sticky
	// record overrode it.
	Rule *Rule
	// Sticky is true when the session's earlier decision was kept.
	Sticky bool
	// Record is true when Route is the first decision of the lane (or
	// replaces one the agent's own model switch made stale) and must be
	// saved with the session.
	Record bool
}

// Decide picks the route of a request whose matching rule is rule (nil:
// none; never a refusal: refusals apply before stickiness), given the
// lane's recorded decision (nil: none, or a side request) and the
// request's built-in provider.
//
// A lane keeps the decision it began with while the agent asks for the
// same model: later requests reuse it unless the rule they match says
// sticky: false. When the agent itself asks for another model (its user
// switched models), that is the agent's choice: the request is routed
// afresh and its decision replaces the record. A record whose upstream no
// longer exists, or serves another family, is ignored and replaced.
func (t *Table) Decide(q *Request, rule *Rule, rec *state.Route, lane string) Decision {
	d := Decision{Rule: rule}
	if rec != nil && rec.RequestedModel == q.Model && (rule == nil || rule.Sticky) {
		if fam, ok := t.Family(rec.Upstream); ok && fam == q.Family {
			d.Route, d.Sticky = *rec, true
			return d
		}
	}
	d.Route = state.Route{RequestedModel: q.Model, Model: q.Model, Upstream: q.Family}
	if rule != nil {
		d.Route.Rule = rule.Name
		if rule.SetModel != "" {
			d.Route.Model = rule.SetModel
		}
		if rule.Upstream != "" {
			d.Route.Upstream = rule.Upstream
		}
	}
	// A sticky: false rule's decision is not recorded: the lane keeps the
	// decision it began with for the requests that match no such rule.
	d.Record = lane != "" && (rule == nil || rule.Sticky) && (rec == nil || *rec != d.Route)
	return d
}
