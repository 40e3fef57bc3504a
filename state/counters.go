package state

import "context"

// Counters are a session's budget counters (turns, tokens, cost, calls per
// tool, the streak of identical calls), kept exactly across replicas: the
// Redis store changes them with one atomic script per call, so two
// replicas serving one session never both take the last unit of a budget.
// Both stores implement it.
//
// Contract:
//   - Counters are named by the caller ("turns", "tokens", "cost_micros",
//     "calls:<tool>", …); a counter never written reads 0.
//   - Reserve adds n to the counter only if the sum stays within limit
//     (limit <= 0: no limit) and reports the counter's value after the
//     call (unchanged when refused) and whether it was added. It is
//     atomic: of concurrent Reserves that together pass the limit, only
//     those that fit succeed.
//   - Add adds n (negative to give back an unused reservation) without a
//     limit and returns the new value.
//   - Streak records one more occurrence of sig under name: when sig is
//     the signature last recorded under name the streak grows by one,
//     otherwise it restarts at 1; it returns the streak after the call.
//   - ReadCounters returns every counter of the session (streaks as their
//     length under their name).
//   - Counters expire with the session (the store's TTL since their last
//     change) and are deleted with it (Store.Delete). They live in the
//     session's hash slot (Redis Cluster).
//   - The key must be Valid (ErrInvalidKey otherwise).
type Counters interface {
	Reserve(ctx context.Context, key Key, name string, n, limit int64) (value int64, ok bool, err error)
	Add(ctx context.Context, key Key, name string, n int64) (int64, error)
	Streak(ctx context.Context, key Key, name, sig string) (int64, error)
	ReadCounters(ctx context.Context, key Key) (map[string]int64, error)
}
