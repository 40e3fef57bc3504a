package state

import "math"

// Spend names what a session's save added to its usage, for a CounterOp
// whose amount is the turn's spend (known only when the turn is saved).
type Spend uint8

// Spends a CounterOp may add.
const (
	// SpendNone: the op adds N only.
	SpendNone Spend = iota
	// SpendTurns: 1 when the save added a turn's usage to the session
	// (Usage.Turns grew: a reply was read), else 0.
	SpendTurns
	// SpendTokens: the tokens the save added to Usage (input, output,
	// cache read and cache write).
	SpendTokens
	// SpendCostMicros: the cost the save added to Usage, in micro-dollars
	// (rounded).
	SpendCostMicros
)

// CounterOp is a change to a session's budget counters (Counters) that
// rides in the session's save instead of a round trip of its own: an
// effect stages it on the session being saved (Session.StageCounters) and
// the store applies it atomically with the write, only if the write lands
// (with Redis: inside the compare-and-set script; a conflict retried by
// Update applies it once, with the retry).
//
//   - Sig == "": the counter Name grows by N plus the Spend.
//   - Sig != "": a Streak step of Name with signature Sig (N and Spend
//     are ignored).
//
// Landed, when not nil, is called once after the write that carried the
// op landed (never when it failed), with the session's Version as written:
// what the caller held in flight is in the counters read with that
// version of the session and every later one.
type CounterOp struct {
	Name   string
	N      int64
	Spend  Spend
	Sig    string
	Landed func(version int64)
}

// CounterSnapshot is a session's budget counters as read with the session
// (Get, when the store prefetches them): values by name (a streak as its
// length) and each streak's last signature. It is shared and read-only.
type CounterSnapshot struct {
	Values map[string]int64
	Sigs   map[string]string
}

// CounterPrefetcher is a store that can read a session's counters in the
// same round trip as the session (Get attaches them: Session.Counters).
// PrefetchCounters turns that on for the store's lifetime (the budgets
// feature asks for it when enabled).
type CounterPrefetcher interface {
	PrefetchCounters()
}

// Counters returns the budget counters read with the session, and false
// when the store did not read them (prefetch off, or a session built by
// the caller).
func (s *Session) Counters() (*CounterSnapshot, bool) {
	if s == nil || s.counters == nil {
		return nil, false
	}
	return s.counters, true
}

// StageCounters records ops to apply, with the save that writes s, to the
// counters of the session s is saved as. It is meant for effects (the
// functions a turn's save applies): staged on a session no store writes
// (a copy for display), the ops are dropped.
func (s *Session) StageCounters(ops ...CounterOp) { s.staged = append(s.staged, ops...) }

// takeStaged removes and returns the ops staged on s, with their amounts
// resolved against what the save added to the session's usage since
// before.
func (s *Session) takeStaged(before Usage) []CounterOp {
	ops := s.staged
	s.staged = nil
	if len(ops) == 0 {
		return nil
	}
	after := s.Usage
	spent := map[Spend]int64{
		SpendTurns: after.Turns - before.Turns,
		SpendTokens: after.InputTokens + after.OutputTokens + after.CacheReadTokens + after.CacheWriteTokens -
			(before.InputTokens + before.OutputTokens + before.CacheReadTokens + before.CacheWriteTokens),
		SpendCostMicros: int64(math.Round((after.CostUSD - before.CostUSD) * 1e6)),
	}
	out := make([]CounterOp, len(ops))
	for i, op := range ops {
		if op.Sig == "" {
			op.N += spent[op.Spend]
		}
		op.Spend = SpendNone
		out[i] = op
	}
	return out
}

// landed calls the Landed of each op once its write landed as version.
func landed(ops []CounterOp, version int64) {
	for _, op := range ops {
		if op.Landed != nil {
			op.Landed(version)
		}
	}
}
