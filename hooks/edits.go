package hooks

import (
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// ReplyDecision is what one reply hook returns. The zero value passes the
// reply unchanged.
type ReplyDecision struct {
	// Calls holds decisions for individual tool calls. Calls not listed pass.
	Calls []conv.CallDecision
	// MoveFirst lists tool-call indices to move before all other tool calls,
	// keeping their relative order.
	MoveFirst []int
	// Effects change the session state. The proxy applies them, in order, in
	// the one atomic state update it makes after the reply; they may run more
	// than once (optimistic retry) and must only modify their argument.
	Effects []func(*state.Session)
	// Continue, when set, asks the turn engine to continue the reply
	// upstream instead of handing it on (truncation recovery). It
	// short-circuits the reply chain: no later hook sees the truncated reply.
	Continue *conv.Continuation
}
