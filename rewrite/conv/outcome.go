package conv

// Fate is what finally happened to one tool call the model made, after every
// hook decided and the turn engine acted on the decisions.
type Fate string

// The fates of a tool call.
const (
	// FateDelivered: the call reached the agent, which will run it.
	FateDelivered Fate = "delivered"
	// FateClaimed: shepherd answered the call itself (a tool of its own);
	// the agent never saw it.
	FateClaimed Fate = "claimed"
	// FateRefused: policy blocked the call; the model was told why and the
	// agent never saw it.
	FateRefused Fate = "refused"
	// FateDropped: the call was cut by the output limit and discarded; the
	// model was asked to make it again.
	FateDropped Fate = "dropped"
	// FateUndelivered: the turn ended before the call could reach the agent
	// (the client left, the upstream failed, a follow-up bound was hit).
	FateUndelivered Fate = "undelivered"
)

// Outcome is the final fate of one tool call of a turn. Hooks see the
// outcomes of a turn once, after the reply was handed to the agent (or the
// turn failed), in the order the model made the calls.
type Outcome struct {
	// Round is the upstream round of the turn that produced the call (0 for
	// the agent's own request, then one per follow-up or continuation).
	Round int
	// Call is the tool call as the model made it.
	Call ToolCall
	Fate Fate
	// Hook names the hook whose decision settled the fate ("" when no hook
	// decided: the call passed); Result is the text the model was given for
	// a claimed or refused call.
	Hook   string
	Result string
	// Rule names the policy rule behind a refusal ("" when none).
	Rule string
}

// TurnOutcome is what finally happened in one turn: the outcome of every
// tool call, how the reply ended, and the upstream rounds it took.
type TurnOutcome struct {
	Calls []Outcome
	// Stop is the stop reason of the last reply handed to the agent
	// (StopNone when none was: the turn failed).
	Stop StopReason
	// Rounds counts upstream requests made for the turn (1 when shepherd
	// made no follow-up or continuation); Continuations counts those made to
	// continue a reply cut by the output limit.
	Rounds        int
	Continuations int
	// Usage sums the token usage of every round, as the upstream reported it.
	Usage Usage
	// CostUSD is the list-price cost of Usage, priced by the turn engine
	// (package pricing) at the model that answered, the same cost the
	// session's usage totals add; 0 when that model has no price.
	CostUSD float64
	// Err is set when the turn failed (upstream error, client gone); the
	// agent then got an error or nothing.
	Err error
}
