package state

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SessionTenants finds every tenant that has the id, and none for an id no
// tenant has.
func TestSessionTenants(t *testing.T) {
	ctx := context.Background()
	st := NewMemory(MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	t.Cleanup(func() { _ = st.Close() })
	for _, k := range []Key{{Tenant: "a", Session: "s"}, {Tenant: "b", Session: "s"}, {Tenant: "a", Session: "other"}} {
		_, err := st.Update(ctx, k, func(*Session) error { return nil })
		require.NoError(t, err)
	}
	got, err := SessionTenants(ctx, st, "s")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b"}, got)
	got, err = SessionTenants(ctx, st, "other")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, got)
	got, err = SessionTenants(ctx, st, "missing")
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, st.Close())
	_, err = SessionTenants(ctx, st, "s")
	require.ErrorIs(t, err, ErrClosed)
}
