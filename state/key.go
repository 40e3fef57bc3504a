package state

import (
	"context"
	"errors"
	"strings"
)

// ErrInvalidKey is returned by Update for a Key that cannot name a session:
// an empty Session, or a Tenant that is empty or contains any of ":{}" or a
// NUL byte (tenants are hashes, so a real one never does; the characters are
// reserved by the Redis key layout). Get reports such a key as ErrNotFound
// too, and Delete treats it as already gone.
var ErrInvalidKey = errors.New("state: invalid session key")

// ErrClosed is returned by every method of a store after Close.
var ErrClosed = errors.New("state: store closed")

// defaultListLimit is the List limit used when the caller passes limit <= 0.
const defaultListLimit = 100

// Valid reports whether k can name a session (see ErrInvalidKey).
func (k Key) Valid() bool {
	return k.Session != "" && validTenant(k.Tenant)
}

func validTenant(t string) bool {
	return t != "" && !strings.ContainsAny(t, ":{}\x00")
}

// listLimit applies the List default.
func listLimit(limit int) int {
	if limit <= 0 {
		return defaultListLimit
	}
	return limit
}

// summarize returns the listing form of s.
func summarize(s *Session) Summary {
	sum := summaryOf(s)
	f := s.Slots.facts()
	sum.Counts, sum.Notes = f.counts, f.notes
	return sum
}

// summaryOf is the listing form of s but for its slots' counts and notes.
func summaryOf(s *Session) Summary {
	return Summary{
		ID:        s.ID,
		Tenant:    s.Tenant,
		CreatedAt: s.CreatedAt,
		UpdatedAt: s.UpdatedAt,
		Requests:  s.Requests,
		Agent:     s.Agent,
		Model:     s.Model,
		Usage:     s.Usage,
	}
}

// LookupLimit is how many of the most recent sessions SessionTenants
// searches.
const LookupLimit = 10000

// SessionTenants lists the tenants under which session id exists among the
// LookupLimit most recently updated sessions of every tenant (the rule the
// admin APIs and the console follow for a session id given without its
// tenant: it must name exactly one). The list is empty when none has it.
func SessionTenants(ctx context.Context, st Store, id string) ([]string, error) {
	list, err := st.List(ctx, "", LookupLimit)
	if err != nil {
		return nil, err
	}
	var tenants []string
	for _, sum := range list {
		if sum.ID == id {
			tenants = append(tenants, sum.Tenant)
		}
	}
	return tenants, nil
}
