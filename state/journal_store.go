package state

import (
	"fmt"
	"time"
)

// MaxEditsPerSession bounds a session's edit journal over all its paths
// (EditJournal: the oldest entries go first).
const MaxEditsPerSession = 1000

// DefaultEditKeep is the per-path bound AppendEdits applies when the
// caller passes keep <= 0.
const DefaultEditKeep = 10

// editKeep applies DefaultEditKeep.
func editKeep(keep int) int {
	if keep <= 0 {
		return DefaultEditKeep
	}
	return keep
}

// checkEditStatus accepts the three edit statuses.
func checkEditStatus(status string) error {
	switch status {
	case EditApplied, EditRefused, EditFailed:
		return nil
	}
	return fmt.Errorf("state: unknown edit status %q", status)
}

// storedEdit returns rec in the form both stores keep: a copy (Before and
// After point at their own strings), At in UTC without a monotonic reading
// (as after a JSON round trip), now when it was zero, and seq.
func storedEdit(rec EditRecord, seq int64, now time.Time) EditRecord {
	rec.Seq = seq
	if rec.At.IsZero() {
		rec.At = now
	}
	rec.At = rec.At.UTC().Round(0)
	rec.Before, rec.After = cloneStringPtr(rec.Before), cloneStringPtr(rec.After)
	return rec
}

// cloneEdit returns a copy of rec that shares no pointers with it.
func cloneEdit(rec EditRecord) EditRecord {
	rec.Before, rec.After = cloneStringPtr(rec.Before), cloneStringPtr(rec.After)
	return rec
}

func cloneStringPtr(p *string) *string {
	if p == nil {
		return nil
	}
	s := *p
	return &s
}
