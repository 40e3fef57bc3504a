package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestStoreFailover: a master is SIGKILLed while a session on it is being
// updated. Ping fails while its slots cannot be served; once every node
// reports cluster_state:ok again, Ping succeeds at once and no Update or
// Get fails (issue 18: the store stayed unavailable ~60 s). No update that
// returned success is lost.
func TestStoreFailover(t *testing.T) {
	t.Parallel()
	c := kit.StartRedisCluster(t)
	st := newClusterStore(t, c, state.RedisOptions{})
	ctx := context.Background()
	key := state.Key{Tenant: "t", Session: "failover"}
	slot := kit.KeySlot("shepherd:{t:failover}:s")
	_, err := st.Update(ctx, key, func(s *state.Session) error { s.Requests++; return nil })
	require.NoError(t, err)
	require.NoError(t, st.Ping(ctx))

	var (
		okAt      atomic.Pointer[time.Time]
		mu        sync.Mutex
		acked     int64 // updates that returned success
		afterOK   []string
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		firstOKAt time.Time
	)
	wg.Add(1)
	go func() { // one request every 20 ms, as a busy replica would
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			started := time.Now()
			_, uerr := st.Update(ctx, key, func(s *state.Session) error { s.Requests++; return nil })
			_, gerr := st.Get(ctx, key)
			mu.Lock()
			if uerr == nil {
				acked++
			}
			if ok := okAt.Load(); ok != nil && started.After(*ok) {
				if firstOKAt.IsZero() && uerr == nil && gerr == nil {
					firstOKAt = time.Now()
				}
				for _, e := range []error{uerr, gerr} {
					if e != nil {
						afterOK = append(afterOK, time.Since(*ok).Round(time.Millisecond).String()+": "+e.Error())
					}
				}
			}
			mu.Unlock()
		}
	}()

	time.Sleep(200 * time.Millisecond)
	killed := c.KillMasterOf(t, slot)
	killedAt := time.Now()
	assert.Error(t, st.Ping(ctx), "Ping right after the master died")
	_, at := c.WaitPromotion(t, killed, slot, 20*time.Second)
	okAt.Store(&at)
	assert.NoError(t, st.Ping(ctx), "Ping once the cluster is ok")
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("cluster ok %s after the kill; store usable %s after that", at.Sub(killedAt).Round(time.Millisecond), firstOKAt.Sub(at).Round(time.Millisecond))
	assert.Empty(t, afterOK, "requests failed after the cluster was ok again")
	require.False(t, firstOKAt.IsZero())
	assert.Less(t, firstOKAt.Sub(at), time.Second)
	got, err := st.Get(ctx, key)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, got.Requests, acked+1, "an acknowledged update was lost")
}

// newClusterStore is a Redis store on the cluster's seeds with the
// production defaults (200 ms per round trip) unless opts says otherwise.
func newClusterStore(t *testing.T, c *kit.RedisCluster, opts state.RedisOptions) *state.Redis {
	t.Helper()
	opts.Addrs = c.Addrs()
	st, err := state.NewRedis(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}
