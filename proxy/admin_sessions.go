package proxy

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/state"
)

// This file holds the sessions API's answer types. They are the API's
// contract, separate from the stored record (state.Session), so that a new
// stored field is never published by accident: the session list carries
// summaries only, and a session's ledger (model output shepherd keeps for
// the turn engine) only on request.

// sessionSummaryJSON is one entry of GET /shepherd/v1/sessions: identity,
// times, request count, the agent and model, usage and cost, the features'
// counts (chapters, refusals) and the current topic and intent names.
type sessionSummaryJSON struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at"`
	Requests  int64     `json:"requests"`
	Agent     string    `json:"agent,omitempty"`
	Model     string    `json:"model,omitempty"`
	Usage     usageJSON `json:"usage"`
	// Counts are the features' counters by name ("chapters", "refusals");
	// absent when no feature counts anything.
	Counts map[string]int64 `json:"counts,omitempty"`
	Topic  string           `json:"topic,omitempty"`
	Intent string           `json:"intent,omitempty"`
}

// usageJSON is a session's token usage summed over its turns (side
// requests included), and its list-price cost in US dollars (0 for models
// without a price). Input counts the input tokens not read from or written
// to the prompt cache (docs/usage.md).
type usageJSON struct {
	Turns            int64   `json:"turns"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// sessionJSON is GET /shepherd/v1/sessions/{id}: the session's metadata,
// chapters, governance audit and recovery counters. Ledger is present only
// with ?include=ledger; LedgerEntries always counts it.
type sessionJSON struct {
	ID        string           `json:"id"`
	Tenant    string           `json:"tenant"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
	Requests  int64            `json:"requests"`
	Version   int64            `json:"version"`
	Agent     string           `json:"agent,omitempty"`
	Model     string           `json:"model,omitempty"`
	Usage     usageJSON        `json:"usage"`
	Counts    map[string]int64 `json:"counts,omitempty"`
	Topic     string           `json:"topic,omitempty"`
	Intent    string           `json:"intent,omitempty"`
	Chapters  []chapterJSON    `json:"chapters"`
	// ChaptersDropped and CallsDropped count the oldest chapters and call
	// notes the session no longer keeps (topics.max_chapters,
	// topics.max_calls).
	ChaptersDropped int64        `json:"chapters_dropped"`
	CallsDropped    int64        `json:"calls_dropped"`
	Audit           []auditJSON  `json:"audit"`
	Recovery        recoveryJSON `json:"recovery"`
	// Budgets are the session's budget counters (budgets.*: turns, tokens,
	// cost_micros, calls:<tool>, streak) when the store keeps any.
	Budgets map[string]int64 `json:"budgets,omitempty"`
	// PrefixTurns are the session's last turns' cache-integrity records
	// (docs/diagnostics.md), oldest first; PrefixBreaks its breaks by cause.
	PrefixTurns   []turn.PrefixTurn `json:"prefix_turns"`
	PrefixBreaks  map[string]int64  `json:"prefix_breaks,omitempty"`
	LedgerEntries int               `json:"ledger_entries"`
	Ledger        []ledgerEntryJSON `json:"ledger,omitempty"`
}

type chapterJSON struct {
	Title     string     `json:"title"`
	StartedAt time.Time  `json:"started_at"`
	Calls     []callJSON `json:"calls,omitempty"`
}

type callJSON struct {
	Name string    `json:"name"`
	ID   string    `json:"id,omitempty"`
	At   time.Time `json:"at"`
}

type auditJSON struct {
	At       time.Time `json:"at"`
	Tool     string    `json:"tool"`
	CallID   string    `json:"call_id,omitempty"`
	Decision string    `json:"decision"`
	Rule     string    `json:"rule,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Intent   string    `json:"intent,omitempty"`
	Topic    string    `json:"topic,omitempty"`
}

type recoveryJSON struct {
	Truncated int64 `json:"truncated"`
	Attempts  int64 `json:"attempts"`
	Recovered int64 `json:"recovered"`
}

// ledgerEntryJSON is one ledger entry; Data is the stored bytes (base64 in
// JSON).
type ledgerEntryJSON struct {
	Kind   string `json:"kind"`
	Anchor string `json:"anchor"`
	Root   string `json:"root,omitempty"`
	At     int    `json:"at,omitempty"`
	Data   []byte `json:"data,omitempty"`
}

func summariesJSON(list []state.Summary) []sessionSummaryJSON {
	out := make([]sessionSummaryJSON, len(list))
	for i, s := range list {
		out[i] = sessionSummaryJSON{ID: s.ID, Tenant: s.Tenant, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
			Requests: s.Requests, Agent: s.Agent, Model: s.Model, Usage: usageJSON(s.Usage), Counts: s.Counts,
			Topic: s.Notes[topics.Name], Intent: s.Notes[intents.Name]}
	}
	return out
}

// sessionAnswer reads the features' slots (a slot this build cannot read
// shows as empty).
func sessionAnswer(s *state.Session, withLedger bool) sessionJSON {
	tp, _ := topics.Of(s)
	if tp == nil {
		tp = &topics.State{}
	}
	in, _ := intents.Of(s)
	if in == nil {
		in = &intents.State{}
	}
	rc, _ := recovery.Of(s)
	if rc == nil {
		rc = &recovery.State{}
	}
	out := sessionJSON{
		ID: s.ID, Tenant: s.Tenant, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		Requests: s.Requests, Version: s.Version, Topic: tp.Topic, Intent: in.Intent,
		Agent: s.Agent, Model: s.Model, Usage: usageJSON(s.Usage), Counts: slotCounts(s.Slots),
		Chapters:        make([]chapterJSON, len(tp.Chapters)),
		ChaptersDropped: tp.ChaptersDropped, CallsDropped: tp.CallsDropped,
		Audit:         make([]auditJSON, len(in.Audit)),
		Recovery:      recoveryJSON(*rc),
		LedgerEntries: len(s.Ledger),
	}
	out.PrefixTurns = []turn.PrefixTurn{}
	if px, _ := turn.PrefixOf(s); px != nil {
		out.PrefixTurns = append(out.PrefixTurns, px.Turns...)
		out.PrefixBreaks = px.Breaks
	}
	for i, c := range tp.Chapters {
		ch := chapterJSON{Title: c.Title, StartedAt: c.StartedAt}
		for _, n := range c.Calls {
			ch.Calls = append(ch.Calls, callJSON(n))
		}
		out.Chapters[i] = ch
	}
	for i, a := range in.Audit {
		out.Audit[i] = auditJSON(a)
	}
	if withLedger {
		out.Ledger = make([]ledgerEntryJSON, len(s.Ledger))
		for i, e := range s.Ledger {
			out.Ledger[i] = ledgerEntryJSON(e)
		}
	}
	return out
}

// budgetCounters reads a session's budget counters for the sessions API:
// nil when the store keeps none, has none for it, or cannot be read (the
// rest of the answer stands).
func (s *Server) budgetCounters(c context.Context, key state.Key) map[string]int64 {
	bc, ok := s.store.(state.Counters)
	if !ok {
		return nil
	}
	got, err := bc.ReadCounters(c, key)
	if err != nil || len(got) == 0 {
		return nil
	}
	return got
}

// slotCounts merges the counters of the slots that have some (state.Counter),
// as the session list's summaries do: should two names collide, the slot
// whose name sorts last wins.
func slotCounts(slots state.Slots) map[string]int64 {
	var out map[string]int64
	for _, name := range slices.Sorted(maps.Keys(slots)) {
		c, ok := slots[name].(state.Counter)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		maps.Copy(out, c.Counts())
	}
	return out
}
