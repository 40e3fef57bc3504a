// Package state keeps per-session state behind the Store interface: an embedded
// bounded memory store (the default) and a Redis store for replicas that share
// sessions.
package state

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by Get for a session that does not exist (or has
// expired).
var ErrNotFound = errors.New("state: session not found")

// ErrConflict is returned by Update when the session kept changing under it
// and the retry budget ran out.
var ErrConflict = errors.New("state: concurrent update conflict")

// Key addresses one session. Tenant is a hash of the agent's credential, so one
// credential can never address another's sessions.
type Key struct {
	Tenant  string
	Session string
}

// LedgerEntry records what shepherd changed in one turn so it can be replayed
// identically on later requests. Kind and Data are owned by the hook that wrote
// the entry; the store treats them as opaque. Data is read-only once the entry
// is in a session: an entry is replaced whole, never edited, so copies of a
// session share it.
type LedgerEntry struct {
	Kind   string `json:"kind"`
	Anchor string `json:"anchor"`
	// Root is the anchor of the first message of the conversation the
	// entry was recorded in ("": not recorded, as in entries written
	// before it was). Anchors chain every message before theirs, so an
	// entry can only match a conversation with the same first anchor:
	// the replay passes over the others (a sub-agent's, sharing the
	// session) without looking for their anchors.
	Root string `json:"root,omitempty"`
	// At is the position of the anchor's message in its conversation as
	// the agent sent it, counted from 1 (0: not recorded, as in entries
	// written before it was). An anchor chains the digests of every
	// message up to its own, so it can only be at that position: the
	// replay looks there instead of searching the conversation for it,
	// and knows an entry whose anchor is not there is not in it.
	At   int    `json:"at,omitempty"`
	Data []byte `json:"data,omitempty"`
}

// Session is the state of one agent session.
type Session struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Requests  int64     `json:"requests"`
	// Agent names the client (claude-code, codex, gemini-cli, cline, an
	// SDK) as the proxy recognised it; Model the model of its latest turn.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// Usage sums the tokens and cost of the session's turns.
	Usage Usage `json:"usage"`
	// Ledger's array is copied on write: copies of a session (clone) share
	// it, so its elements are never assigned in place. A writer replaces
	// the slice with its own copy first (appending to a copy's slice
	// allocates: clone clips it).
	Ledger []LedgerEntry `json:"ledger,omitempty"`
	// Slots holds each hook's own state under the hook's name (see Slot):
	// topics' chapters, intents' selection and audit trail, recovery's
	// counters.
	Slots Slots `json:"slots,omitempty"`
	// Routes holds the routing decision each lane of the session began
	// with ("main", "subagent"; package routing), so later requests keep
	// its model and upstream (a switch mid-conversation breaks prompt
	// caches and thinking signatures).
	Routes map[string]Route `json:"routes,omitempty"`
	// Version increases by one on every successful Update.
	Version int64 `json:"version"`

	// counters are the budget counters Get read with the session (nil when
	// the store does not prefetch them); shared, read-only, not stored.
	counters *CounterSnapshot
	// staged are counter changes effects staged for the save writing this
	// session (StageCounters); never stored, dropped by clone.
	staged []CounterOp
}

// Route is a routing decision a session keeps: the rule that made it (""
// when no rule matched), the model the agent asked for, the model and the
// upstream the request went to.
type Route struct {
	Rule           string `json:"rule,omitempty"`
	RequestedModel string `json:"requested_model"`
	Model          string `json:"model"`
	Upstream       string `json:"upstream"`
}

// Usage is token and cost accounting, summed over a session's turns.
type Usage struct {
	// Turns counts the turns whose usage is summed (side requests
	// included: they cost tokens too).
	Turns            int64 `json:"turns"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CostUSD is the list-price cost of those tokens (0 for a model
	// without a price).
	CostUSD float64 `json:"cost_usd"`
}

// Summary is the listing form of a session.
type Summary struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Requests  int64     `json:"requests"`
	Agent     string    `json:"agent,omitempty"`
	Model     string    `json:"model,omitempty"`
	Usage     Usage     `json:"usage"`
	// Counts holds each slot's counters worth listing (see Counter), by
	// name: "chapters", "refusals".
	Counts map[string]int64 `json:"counts,omitempty"`
	// Notes holds the short note of each slot that has one (see Noter),
	// by slot name: the active topic under "topics", the active intent
	// under "intents".
	Notes map[string]string `json:"notes,omitempty"`
}

// Store persists sessions.
//
// Contract, for every implementation:
//   - Every method honours ctx; implementations add their own per-call timeout.
//   - Get returns ErrNotFound (test with errors.Is) for a missing or expired
//     session. The returned *Session is the caller's own copy (but for
//     the read-only bytes of LedgerEntry.Data, which copies share).
//   - Update runs fn on the current session (a fresh zero Session with ID,
//     Tenant and CreatedAt set if none exists) and stores the result
//     atomically: concurrent Updates of one key never lose a write. fn may be
//     called more than once (optimistic retry) and must be free of side effects
//     other than on its argument. If fn returns an error nothing is stored and
//     that error is returned (wrapped). Update sets UpdatedAt, increments
//     Version and refreshes the TTL; ID, Tenant, CreatedAt, UpdatedAt and
//     Version belong to the store, and changes fn makes to them are
//     discarded. It returns the session as stored, the caller's own copy.
//   - A Key must be Valid: Update rejects other keys with ErrInvalidKey, Get
//     reports them as ErrNotFound and Delete as already deleted. Deleting a
//     missing session is not an error.
//   - Sessions expire after the configured TTL since their last Update.
//   - List returns the most recently updated sessions first, at most limit
//     (limit <= 0 means a default of 100); tenant "" lists every tenant.
//   - Ping reports whether the store can serve requests (for /readyz).
//   - After Close every method returns ErrClosed; Close is idempotent.
type Store interface {
	Get(ctx context.Context, key Key) (*Session, error)
	Update(ctx context.Context, key Key, fn func(*Session) error) (*Session, error)
	Delete(ctx context.Context, key Key) error
	List(ctx context.Context, tenant string, limit int) ([]Summary, error)
	Ping(ctx context.Context) error
	Close() error
}
