package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryFeedContract(t *testing.T) {
	runFeedContract(t, func(t *testing.T, o feedOptions) feedHarness {
		m, clock := newTestMemory(t, MemoryOptions{TTL: o.ttl, EventsPerSession: o.perSession, EventsGlobal: o.glob})
		return feedHarness{st: m, now: clock.Now, pass: clock.Advance, fakeClock: true}
	})
}

// TestMemoryEventIDsWhenTheClockStalls: ids keep increasing within a
// millisecond and when the clock goes backwards.
func TestMemoryEventIDsWhenTheClockStalls(t *testing.T) {
	ctx := context.Background()
	m, clock := newTestMemory(t, MemoryOptions{})
	k := Key{Tenant: "t", Session: "s"}
	require.NoError(t, m.AppendEvents(ctx, k, [][]byte{[]byte("1"), []byte("2")}))
	clock.Advance(-time.Second)
	require.NoError(t, m.AppendEvents(ctx, k, [][]byte{[]byte("3")}))
	clock.Advance(2 * time.Second)
	require.NoError(t, m.AppendEvents(ctx, k, [][]byte{[]byte("4")}))
	got, err := m.SessionEvents(ctx, k, "", 0)
	require.NoError(t, err)
	ms := clock.Now().Add(-time.Second).UnixMilli()
	assert.Equal(t, []string{
		fmt.Sprintf("%d-0", ms), fmt.Sprintf("%d-1", ms), fmt.Sprintf("%d-2", ms), fmt.Sprintf("%d-0", ms+1000),
	}, []string{got[0].ID, got[1].ID, got[2].ID, got[3].ID})
}

// TestMemoryFeedBoundedAndPurged: session logs are evicted with their
// session and purged by the janitor once expired; approvals past their
// retention too.
func TestMemoryFeedBoundedAndPurged(t *testing.T) {
	ctx := context.Background()
	m, clock := newTestMemory(t, MemoryOptions{MaxSessions: 2, TTL: time.Minute, JanitorInterval: -1})
	keys := []Key{{Tenant: "t", Session: "0"}, {Tenant: "t", Session: "1"}, {Tenant: "t", Session: "2"}}
	for _, k := range keys {
		require.NoError(t, m.AppendEvents(ctx, k, [][]byte{[]byte(k.Session)}))
		clock.Advance(time.Millisecond)
	}
	m.evMu.Lock()
	assert.Len(t, m.evLogs, 2, "at most MaxSessions logs")
	assert.Nil(t, m.evLogs[keys[0]], "the least recently appended went")
	m.evMu.Unlock()

	// Evicting a session drops its log.
	for _, k := range keys[1:] {
		_, err := m.Update(ctx, k, func(s *Session) error { return nil })
		require.NoError(t, err)
	}
	_, err := m.Update(ctx, keys[0], func(s *Session) error { return nil })
	require.NoError(t, err)
	got, err := m.SessionEvents(ctx, keys[1], "", 0)
	require.NoError(t, err)
	assert.Empty(t, got, "evicted with its session")

	require.NoError(t, m.HoldApproval(ctx, keys[2], testApproval("x", clock.Now(), time.Second)))
	clock.Advance(time.Minute + ApprovalRetention)
	m.purgeEvents(clock.Now())
	m.purgeApprovals(clock.Now())
	m.evMu.Lock()
	assert.Empty(t, m.evLogs, "expired logs purged")
	m.evMu.Unlock()
	m.apMu.Lock()
	assert.Empty(t, m.approvals, "approvals past retention purged")
	m.apMu.Unlock()
}
