package state

import (
	"errors"
	"fmt"
	"time"
)

// ApprovalRetention is how long both stores keep an approval after its
// ExpiresAt (decided or not), so the replica holding the call and the
// console can still read the outcome; it is then dropped.
const ApprovalRetention = 5 * time.Minute

// errApprovalID is returned by HoldApproval for an approval without an id.
var errApprovalID = errors.New("state: approval without an id")

// checkHold validates a HoldApproval call.
func checkHold(key Key, a Approval) error {
	if !key.Valid() {
		return ErrInvalidKey
	}
	if a.ID == "" {
		return errApprovalID
	}
	return nil
}

// checkDecision validates a DecideApproval call. An invalid key is
// ErrNotFound, wrapping ErrInvalidKey, as for Get.
func checkDecision(key Key, decision string) error {
	if !key.Valid() {
		return fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	if decision != ApprovalApproved && decision != ApprovalDenied {
		return fmt.Errorf("state: decision %q is neither %q nor %q", truncateForError(decision), ApprovalApproved, ApprovalDenied)
	}
	return nil
}

// pendingForm is a as HoldApproval stores it: addressed by key, undecided,
// its times in UTC without a monotonic reading (as after a JSON round
// trip, so both stores return equal values).
func pendingForm(key Key, a Approval) Approval {
	a.Session, a.Tenant = key.Session, key.Tenant
	a.Decision, a.By, a.Note, a.DecidedAt = ApprovalPending, "", "", time.Time{}
	a.HeldAt = a.HeldAt.UTC().Round(0)
	a.ExpiresAt = a.ExpiresAt.UTC().Round(0)
	return a
}

// decide returns cur decided at now, or ErrDecided when it was decided
// already or expired (except the holder's own denial by
// ApprovalByTimeout, which records the expiry).
func decide(cur Approval, decision, by, note string, now time.Time) (Approval, error) {
	if cur.Decision != ApprovalPending {
		return Approval{}, fmt.Errorf("state: approval %q (%s): %w", cur.ID, cur.Decision, ErrDecided)
	}
	if !now.Before(cur.ExpiresAt) && (decision != ApprovalDenied || by != ApprovalByTimeout) {
		return Approval{}, fmt.Errorf("state: approval %q (expired): %w", cur.ID, ErrDecided)
	}
	cur.Decision, cur.By, cur.Note, cur.DecidedAt = decision, by, note, now.UTC().Round(0)
	return cur, nil
}

// approvalDropped reports whether a is past its retention at now.
func approvalDropped(a Approval, now time.Time) bool {
	return !now.Before(a.ExpiresAt.Add(ApprovalRetention))
}
