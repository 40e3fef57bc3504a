package intents

// CountRefusals is the Summary.Counts name of the number of refused calls.
const CountRefusals = "refusals"

// Counts implements state.Counter: the refusals among the audit entries
// kept (the audit is bounded by Options.MaxAudit, so this counts the
// recent ones), for session listings.
func (s *State) Counts() map[string]int64 {
	n := storedRefusals(s.storedAudit)
	for _, e := range s.Audit {
		if e.Decision == DecisionRefused {
			n++
		}
	}
	return map[string]int64{CountRefusals: n}
}
