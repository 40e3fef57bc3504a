// Package policy reads, validates and watches the intents policy file
// (by default .orchestration/active_intents.yaml).
//
// The file declares the intents an agent may work under: each intent has an
// id, a summary, a file scope (allow_glob / deny_glob / ask_glob),
// constraints on the tools it may call (disallow_tools / disallow_patterns,
// and ask_tools / ask_patterns for calls a person must approve) and
// acceptance criteria. Parse turns the file's bytes into an immutable *Policy, reporting
// every problem with its line number. Matching helpers (CheckPath,
// DisallowsTool, MatchPattern), workspace path normalisation (NormalizePath),
// extraction of the paths a tool call touches (PathArgs, PatchPaths) and a
// hot-reloading Watcher complete the package.
//
// A *Policy and the *Intent values it holds are never mutated after Parse
// returns them, so they may be shared freely between goroutines.
package policy

import (
	"regexp"
	"time"
)

// IDPattern is the format every intent id must have: "INT-" followed by at
// least three digits.
var IDPattern = regexp.MustCompile(`^INT-[0-9]{3,}$`)

// Criterion statuses accepted in acceptance_criteria[].status.
const (
	StatusPending = "pending"
	StatusMet     = "met"
	StatusFailed  = "failed"
)

// Criterion is one acceptance criterion of an intent. Status is one of
// StatusPending, StatusMet or StatusFailed (StatusPending when the file omits
// it).
type Criterion struct{ ID, Description, Status string }

// Intent is one validated intent of a policy file. Globs are stored with any
// leading "./" removed; DisallowPatterns holds the regexp sources in file
// order. Values returned by Parse carry compiled regexps; an Intent built by
// hand works too (its patterns are then compiled on every call and invalid
// ones are ignored).
type Intent struct {
	ID, Summary      string
	AllowGlob        []string
	DenyGlob         []string
	DisallowTools    []string
	DisallowPatterns []string // sources, in file order
	// AskGlob, AskTools and AskPatterns are the "ask" rules: a call they
	// match is held until a person approves it (instead of refused), unless
	// a refusing rule matches it too. They match like their refusing
	// counterparts (deny_glob, disallow_tools, disallow_patterns).
	AskGlob     []string
	AskTools    []string
	AskPatterns []string // sources, in file order
	Criteria    []Criterion

	res    []*regexp.Regexp // compiled DisallowPatterns, same order; set by Parse
	askRes []*regexp.Regexp // compiled AskPatterns, same order; set by Parse
}

// Policy is a parsed, validated policy file. It is immutable once returned
// by Parse.
type Policy struct {
	File            string    // path it was read from (as given to Parse)
	Version         int       // always 1 for a valid policy
	CurrentIntentID string    // "" when null/absent; otherwise names one of Intents
	Intents         []Intent  // file order
	LoadedAt        time.Time // when Parse produced it
	Hash            string    // hex sha256 of the file bytes

	index map[string]int // id -> position in Intents
}

// Intent returns the intent with the given id. The pointer refers into
// p.Intents and must not be modified. A nil Policy has no intents.
func (p *Policy) Intent(id string) (*Intent, bool) {
	if p == nil {
		return nil, false
	}
	if p.index != nil {
		i, ok := p.index[id]
		if !ok {
			return nil, false
		}
		return &p.Intents[i], true
	}
	for i := range p.Intents {
		if p.Intents[i].ID == id {
			return &p.Intents[i], true
		}
	}
	return nil, false
}

// IDs returns the ids of all intents in file order (a new slice each call).
func (p *Policy) IDs() []string {
	if p == nil {
		return nil
	}
	ids := make([]string, len(p.Intents))
	for i := range p.Intents {
		ids[i] = p.Intents[i].ID
	}
	return ids
}
