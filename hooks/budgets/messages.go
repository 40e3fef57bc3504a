package budgets

import (
	"fmt"
	"net/http"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// EstimateTokens is what a request reserves of the token budget before it
// goes upstream: its input, the characters of the system prompt, message
// texts, tool calls and tool results over 4 (tool schemas are not in the
// view and not counted), plus the output limit it sets (0 when it sets
// none). The outcome replaces it with the tokens the upstream reported.
func EstimateTokens(req *conv.Request) int64 {
	if req == nil {
		return 0
	}
	chars := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			chars += len(b.Text) + len(b.Args)
		}
	}
	n := int64(chars+3) / 4
	if req.HasMaxOutputTokens && req.MaxOutputTokens > 0 {
		n += req.MaxOutputTokens
	}
	return max(n, 1)
}

// budgetKeys are the configuration keys of the request budgets, named in
// the 429's message.
var budgetKeys = map[string]string{
	budgetTurns: "budgets.max_turns", budgetTokens: "budgets.max_tokens", budgetCost: "budgets.max_cost_usd",
}

// refuseRequest answers a request over a budget: HTTP 429 with
// x-should-retry false (the official SDKs then do not retry), and a
// message naming the budget, its limit, its counter (what was spent, with
// the reservations of requests in flight) and the session's spend as its
// usage totals have it (turns, tokens, cost), which the agent shows its
// user.
func (h *Hook) refuseRequest(call *hooks.Call, budget string, limit, value, asked int64) *hooks.Response {
	h.o.Metrics.refused(budget)
	var what string
	switch budget {
	case budgetTurns:
		what = fmt.Sprintf("its limit of %d turns (%s): %d taken", limit, budgetKeys[budget], value)
		h.emit(call, budget, limit, value, "", "")
	case budgetTokens:
		what = fmt.Sprintf("its limit of %d tokens (%s): %d spent, this request needs about %d more",
			limit, budgetKeys[budget], value, asked)
		h.emit(call, budget, limit, value, "", "")
	case budgetCost:
		what = fmt.Sprintf("its cost limit of %s (%s): %s spent", usd(limit), budgetKeys[budget], usd(value))
		h.emit(call, budget, float64(limit)/1e6, float64(value)/1e6, "", "")
	}
	var turns, tokens int64
	var cost float64
	if s := call.Session; s != nil {
		u := s.Usage
		turns, tokens, cost = s.Requests, u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.CostUSD
	}
	msg := fmt.Sprintf("shepherd budget: this session reached %s. Spent so far: %d turns, %d tokens, %s. "+
		"Start a new session or raise the budget to continue.", what, turns, tokens, usd(micros(cost)))
	return &hooks.Response{Status: http.StatusTooManyRequests, Message: msg,
		Headers: map[string]string{"x-should-retry": "false"}}
}

// usd formats micro-dollars as dollars.
func usd(micros int64) string { return fmt.Sprintf("$%.4f", float64(micros)/1e6) }

// toolReason is the tool result of a call past its tool's cap.
func toolReason(tool string, limit, calls int64) string {
	return fmt.Sprintf("budget: %s may be called at most %d times in this session; it was called %d times. "+
		"This call was not run. Finish the task without %s, or tell the user the budget is spent.", tool, limit, calls, tool)
}

// loopReason is the tool result of a call repeated past the loop cap.
func loopReason(times int64) string {
	return fmt.Sprintf("loop: this exact call was made %d times in a row; it was not run again. "+
		"Repeating it will not give a different result: change the arguments, use another tool, or explain to the user what blocks you.", times)
}

// reached reports a refused call: metric and budget.reached.
func (h *Hook) reached(call *hooks.Call, budget string, limit, spent int64, c conv.ToolCall) {
	h.o.Metrics.refused(budget)
	h.emit(call, budget, limit, spent, c.Name, c.ID)
}

// emit sends budget.reached.
func (h *Hook) emit(call *hooks.Call, budget string, limit, spent any, tool, callID string) {
	data := map[string]any{"budget": budget, "limit": limit, "spent": spent}
	if tool != "" {
		data["tool"], data["call_id"] = tool, callID
	}
	h.o.Events.Emit(events.Event{
		Type: events.BudgetReached, At: h.o.Now(), Session: call.SessionID, Tenant: call.Tenant,
		Route: call.Route, RequestID: call.RequestID, Data: data,
	})
}
