package state

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

var _ Approvals = (*Memory)(nil)

// HoldApproval implements Approvals.
func (m *Memory) HoldApproval(ctx context.Context, key Key, a Approval) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: hold approval: %w", err)
	}
	if err := checkHold(key, a); err != nil {
		return err
	}
	if m.isClosed() {
		return ErrClosed
	}
	a = pendingForm(key, a)
	m.apMu.Lock()
	defer m.apMu.Unlock()
	byID := m.approvals[key]
	if byID == nil {
		byID = map[string]*Approval{}
		m.approvals[key] = byID
	}
	byID[a.ID] = &a
	return nil
}

// DecideApproval implements Approvals.
func (m *Memory) DecideApproval(ctx context.Context, key Key, id, decision, by, note string) (Approval, error) {
	if err := ctx.Err(); err != nil {
		return Approval{}, fmt.Errorf("state: decide approval: %w", err)
	}
	if err := checkDecision(key, decision); err != nil {
		return Approval{}, err
	}
	if m.isClosed() {
		return Approval{}, ErrClosed
	}
	now := m.clock()
	m.apMu.Lock()
	defer m.apMu.Unlock()
	cur := m.liveApprovalLocked(key, id, now)
	if cur == nil {
		return Approval{}, fmt.Errorf("state: approval %q: %w", id, ErrNotFound)
	}
	decided, err := decide(*cur, decision, by, note, now)
	if err != nil {
		return Approval{}, err
	}
	*cur = decided
	return decided, nil
}

// GetApproval implements Approvals.
func (m *Memory) GetApproval(ctx context.Context, key Key, id string) (Approval, error) {
	if err := ctx.Err(); err != nil {
		return Approval{}, fmt.Errorf("state: get approval: %w", err)
	}
	if !key.Valid() {
		return Approval{}, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	if m.isClosed() {
		return Approval{}, ErrClosed
	}
	m.apMu.Lock()
	defer m.apMu.Unlock()
	cur := m.liveApprovalLocked(key, id, m.clock())
	if cur == nil {
		return Approval{}, fmt.Errorf("state: approval %q: %w", id, ErrNotFound)
	}
	return *cur, nil
}

// PendingApprovals implements Approvals.
func (m *Memory) PendingApprovals(ctx context.Context, tenant string, limit int) ([]Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("state: pending approvals: %w", err)
	}
	if m.isClosed() {
		return nil, ErrClosed
	}
	now := m.clock()
	out := []Approval{}
	m.apMu.Lock()
	for key, byID := range m.approvals {
		if tenant != "" && key.Tenant != tenant {
			continue
		}
		for _, a := range byID {
			if a.Decision == ApprovalPending && now.Before(a.ExpiresAt) {
				out = append(out, *a)
			}
		}
	}
	m.apMu.Unlock()
	slices.SortFunc(out, comparePending)
	return out[:min(len(out), listLimit(limit))], nil
}

// liveApprovalLocked returns the stored approval, nil when unknown or
// dropped (one past its retention is removed).
func (m *Memory) liveApprovalLocked(key Key, id string, now time.Time) *Approval {
	a := m.approvals[key][id]
	if a != nil && approvalDropped(*a, now) {
		m.dropApprovalLocked(key, id)
		return nil
	}
	return a
}

func (m *Memory) dropApprovalLocked(key Key, id string) {
	delete(m.approvals[key], id)
	if len(m.approvals[key]) == 0 {
		delete(m.approvals, key)
	}
}

// dropApprovals removes every approval of key (Delete of the session).
func (m *Memory) dropApprovals(key Key) {
	m.apMu.Lock()
	defer m.apMu.Unlock()
	delete(m.approvals, key)
}

// purgeApprovals drops the approvals past their retention.
func (m *Memory) purgeApprovals(now time.Time) {
	m.apMu.Lock()
	defer m.apMu.Unlock()
	for key, byID := range m.approvals {
		for id, a := range byID {
			if approvalDropped(*a, now) {
				m.dropApprovalLocked(key, id)
			}
		}
	}
}

// comparePending orders approvals oldest held first (then by session and
// id, so the order is stable).
func comparePending(a, b Approval) int {
	return cmp.Or(a.HeldAt.Compare(b.HeldAt), cmp.Compare(a.Tenant, b.Tenant),
		cmp.Compare(a.Session, b.Session), cmp.Compare(a.ID, b.ID))
}
