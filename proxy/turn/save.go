package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

// baseUpdater is a store that can commit an update against the session as
// it was read, saving the read (state.Redis).
type baseUpdater interface {
	UpdateFrom(ctx context.Context, key state.Key, base *state.Session, fn func(*state.Session) error) (*state.Session, error)
}

// save applies the turn's effects and ledger entries in one atomic update:
// with Redis, one round trip (a compare-and-set against the session loaded
// at the start of the request, falling back to read-modify-write if another
// request changed it meanwhile). It returns the key saved under and whether
// anything was saved.
//
// An opening request (no session id, no model turn yet) is saved under the
// fingerprint of its continuation, the conversation with the reply the
// agent got appended: only the request that sends that reply back finds
// it. Without a reply (the upstream failed, the client went away) there is
// nothing to continue and nothing is saved. A side request that changed
// nothing only adds its usage to a session that exists (never creating
// one).
func (t *Turn) save() (state.Key, bool) {
	side := t.call.Side != ""
	acct := t.usage()
	if side && len(t.effects) == 0 && len(t.entries) == 0 && (acct == nil || t.base == nil) {
		return t.key, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.e.storeTimeout)
	defer cancel()
	// An opening request's base is nil (its fresh id was never stored), so
	// the continuation is created by one compare-and-set, as any new
	// session is.
	key := t.key
	if t.opening {
		var err error
		if key, err = t.continuationKey(); err != nil {
			t.warn("no session for the continuation of this conversation; its state is not kept", err)
			return key, false
		}
	}
	prefix := t.prefixResult()
	if prefix != nil && t.lastSent != nil {
		prefix.followed(t.prefixKey, t.lastSent)
	}
	fn := func(s *state.Session) error {
		if !side {
			s.Requests++
		}
		for _, fx := range t.effects {
			fx(s)
		}
		appendLedger(s, t.entries)
		acct.addTo(s)
		if prefix != nil {
			prefix.record(s, acct)
		}
		return nil
	}
	var err error
	var saved *state.Session
	if u, ok := t.e.store.(baseUpdater); ok && !t.call.StateUnavailable {
		saved, err = u.UpdateFrom(ctx, key, t.base, fn)
	} else {
		saved, err = t.e.store.Update(ctx, key, fn)
	}
	if err != nil {
		t.e.metrics.StoreError("update")
		t.warn("saving session failed; the next request may not replay this turn", err)
		return key, false
	}
	t.call.Saved = saved
	return key, true
}

// errNoContinuation: an opening request ended without a reply for the
// agent, or its continuation has no fingerprint.
var errNoContinuation = errors.New("turn: no reply to continue the conversation from")

// continuationKey is the session key of the conversation an opening
// request continues into: its fingerprint with the agent's copy of the
// reply appended, which is what the agent's next request carries.
func (t *Turn) continuationKey() (state.Key, error) {
	if t.agentReply == nil {
		return state.Key{}, errNoContinuation
	}
	items, err := t.tc.ReplyAsMessages(t.agentReply)
	if err != nil {
		return state.Key{}, fmt.Errorf("turn: reading the reply: %w", err)
	}
	next, err := t.tc.AppendMessages(t.body, items)
	if err != nil {
		return state.Key{}, fmt.Errorf("turn: appending the reply: %w", err)
	}
	fp := rewrite.RequestFingerprint(t.codec, next)
	if fp == "" {
		return state.Key{}, errNoContinuation
	}
	return state.Key{Tenant: t.key.Tenant, Session: t.e.sessionFor(fp)}, nil
}
