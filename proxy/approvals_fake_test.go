package proxy_test

// TEMPORARY: a state.Store with approvals for the e2e tests until the
// real stores implement state.Approvals (helper "store"); removed then.

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

type fakeApprovalStore struct {
	state.Store
	mu sync.Mutex
	m  map[string]state.Approval
}

func withApprovals(st state.Store) state.Store {
	if _, ok := st.(state.Approvals); ok {
		return st
	}
	return &fakeApprovalStore{Store: st, m: map[string]state.Approval{}}
}

func (f *fakeApprovalStore) HoldApproval(_ context.Context, key state.Key, a state.Approval) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[key.Tenant+"/"+key.Session+"/"+a.ID] = a
	return nil
}

func (f *fakeApprovalStore) DecideApproval(_ context.Context, key state.Key, id, decision, by, note string) (state.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.m[key.Tenant+"/"+key.Session+"/"+id]
	switch {
	case !ok:
		return state.Approval{}, state.ErrNotFound
	case a.Decision != state.ApprovalPending || time.Now().After(a.ExpiresAt):
		return a, state.ErrDecided
	}
	a.Decision, a.By, a.Note, a.DecidedAt = decision, by, note, time.Now()
	f.m[key.Tenant+"/"+key.Session+"/"+id] = a
	return a, nil
}

func (f *fakeApprovalStore) GetApproval(_ context.Context, key state.Key, id string) (state.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.m[key.Tenant+"/"+key.Session+"/"+id]
	if !ok {
		return a, state.ErrNotFound
	}
	return a, nil
}

func (f *fakeApprovalStore) PendingApprovals(_ context.Context, tenant string, _ int) ([]state.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []state.Approval{}
	for _, a := range f.m {
		if a.Decision == state.ApprovalPending && (tenant == "" || a.Tenant == tenant) && time.Now().Before(a.ExpiresAt) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].HeldAt.Before(out[j].HeldAt) })
	return out, nil
}
