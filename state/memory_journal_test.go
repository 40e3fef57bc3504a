package state

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryJournalContract(t *testing.T) {
	runJournalContract(t, func(t *testing.T, ttl time.Duration) journalHarness {
		m, clock := newTestMemory(t, MemoryOptions{TTL: ttl})
		return journalHarness{st: m, now: clock.Now, pass: clock.Advance}
	})
}

// TestMemoryJournalBoundedAndPurged: journals are evicted with their
// session, at most MaxSessions are kept, and the janitor purges expired
// ones.
func TestMemoryJournalBoundedAndPurged(t *testing.T) {
	ctx := context.Background()
	m, clock := newTestMemory(t, MemoryOptions{MaxSessions: 2, TTL: time.Minute, JanitorInterval: -1})
	keys := []Key{{Tenant: "t", Session: "0"}, {Tenant: "t", Session: "1"}, {Tenant: "t", Session: "2"}}
	for _, k := range keys {
		_, err := m.AppendEdits(ctx, k, 10, []EditRecord{edit("a.go", "c")})
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	m.jnMu.Lock()
	assert.Len(t, m.journals, 2, "at most MaxSessions journals")
	assert.Nil(t, m.journals[keys[0]], "the least recently appended went")
	m.jnMu.Unlock()

	// Evicting a session drops its journal.
	for _, k := range keys[1:] {
		_, err := m.Update(ctx, k, func(s *Session) error { return nil })
		require.NoError(t, err)
	}
	_, err := m.Update(ctx, keys[0], func(s *Session) error { return nil })
	require.NoError(t, err)
	got, err := m.Edits(ctx, keys[1], "")
	require.NoError(t, err)
	assert.Empty(t, got, "evicted with its session")

	clock.Advance(time.Minute)
	m.purgeJournals(clock.Now())
	m.jnMu.Lock()
	assert.Empty(t, m.journals, "expired journals purged")
	assert.Zero(t, m.jnOrder.Len())
	m.jnMu.Unlock()
}
