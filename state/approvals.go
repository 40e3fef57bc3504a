package state

import (
	"context"
	"errors"
	"time"
)

// ErrDecided is returned by DecideApproval for an approval that was
// already decided (or expired).
var ErrDecided = errors.New("state: approval already decided")

// Approval decisions.
const (
	ApprovalPending  = ""
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
)

// ApprovalByTimeout is Approval.By of a call denied because nobody decided
// in time. DecideApproval accepts that denial past ExpiresAt: the replica
// holding the call records the expiry however late its timer fires.
const ApprovalByTimeout = "timeout"

// Approval is a tool call held until a person approves or denies it. It
// is bound to that exact call: ID is a hash of the session id and the
// call's id, tool and arguments (turn.ApprovalID computes it), so a
// decision never applies to another call.
type Approval struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Tenant  string `json:"tenant"`
	// CallID is the call's id as the model made it; Tool its tool; Args
	// its arguments (JSON, cut to a size fit for a screen).
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Args   string `json:"args"`
	// Intent is the session's intent when the call was held; Reason and
	// Rule why the policy asks.
	Intent    string    `json:"intent,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	HeldAt    time.Time `json:"held_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Decision is ApprovalPending, ApprovalApproved or ApprovalDenied;
	// By says who decided ("console", "api", "timeout"); Note is an
	// optional message given to the model with a denial.
	Decision  string    `json:"decision,omitempty"`
	By        string    `json:"by,omitempty"`
	Note      string    `json:"note,omitempty"`
	DecidedAt time.Time `json:"decided_at,omitempty"`
}

// Approvals keeps held calls and their decisions where every replica sees
// them: the replica holding the call waits for a decision any replica
// records. Both Memory and Redis implement it.
//
// Contract, for every implementation:
//   - HoldApproval stores a pending approval (Decision empty) under the
//     session's key and a.ID; holding an id again replaces it. It is kept
//     until a while after ExpiresAt (at least a minute), then dropped.
//   - DecideApproval records decision (ApprovalApproved or
//     ApprovalDenied), by and note on a pending approval, atomically: of
//     two racing decisions exactly one wins; the other gets ErrDecided.
//     An unknown or dropped id is ErrNotFound; one past ExpiresAt is
//     ErrDecided, except a denial by ApprovalByTimeout. It returns the approval as decided.
//   - GetApproval returns the approval as stored (ErrNotFound when
//     unknown or dropped).
//   - PendingApprovals lists undecided approvals not yet expired, oldest
//     first, of one tenant ("" for every tenant), at most limit (<= 0:
//     100).
//   - Store.Delete of the session drops its approvals. A key must be
//     Valid: HoldApproval returns ErrInvalidKey, DecideApproval and
//     GetApproval ErrNotFound (wrapping ErrInvalidKey).
type Approvals interface {
	HoldApproval(ctx context.Context, key Key, a Approval) error
	DecideApproval(ctx context.Context, key Key, id, decision, by, note string) (Approval, error)
	GetApproval(ctx context.Context, key Key, id string) (Approval, error)
	PendingApprovals(ctx context.Context, tenant string, limit int) ([]Approval, error)
}
