package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// sizing measures what one session costs on the Redis Cluster c after a
// 12-turn conversation through the proxy (topics on, the live feed on):
// its keys (all in the session's one hash slot), their MEMORY USAGE, and
// the store's round trips per request. docs/operations-redis.md quotes
// the numbers it logs (go test -run TestOnCluster/Sizing -v ./test/cluster).
func sizing(t *testing.T, c *kit.RedisCluster) {
	ctx := context.Background()
	rt := &kit.RedisTrips{}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	cc.AddHook(rt)
	t.Cleanup(func() { _ = cc.Close() })
	st, err := state.NewRedis(state.RedisOptions{Client: cc, KeyPrefix: "sizing", TTL: time.Hour, Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	m := kit.StartMock(t, mock.Options{})
	url := startProxy(t, m, st)

	const turns = 12
	s := newSession(kit.Get(t, "anthropic"), m, url, "sizing-1")
	rt.Take() // the session's set-up before the turns
	for range turns {
		s.turn(t)
	}
	requests := int64(len(m.Requests()))
	time.Sleep(300 * time.Millisecond) // the feed publisher's last batch
	taken := rt.Take()
	trips, cmds := int64(len(taken)), int64(0)
	for _, trip := range taken {
		cmds += int64(len(trip))
	}

	tenant := jsonField(t, mustGet(t, url+"/shepherd/v1/sessions/sizing-1"), "tenant")
	tag := "{" + tenant + ":sizing-1}"
	var sessionKeys, shared []string
	var sessionBytes, sharedBytes int64
	var mu sync.Mutex
	sizes := map[string]int64{}
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, "sizing:*").Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			n, err := node.MemoryUsage(ctx, k).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			sizes[k] = n
			if strings.Contains(k, tag) {
				sessionKeys = append(sessionKeys, k)
				sessionBytes += n
			} else {
				shared = append(shared, k)
				sharedBytes += n
			}
			mu.Unlock()
		}
		return nil
	}))
	for _, k := range sessionKeys {
		assert.Equal(t, kit.KeySlot(sessionKeys[0]), kit.KeySlot(k), "%s shares the session's slot", k)
	}
	assert.GreaterOrEqual(t, len(sessionKeys), 2, "the session hash and its event stream")
	t.Logf("sizing: %d turns, %d upstream requests; session keys %d bytes, shared keys %d bytes (MEMORY USAGE): %v",
		turns, requests, sessionBytes, sharedBytes, sizes)
	t.Logf("sizing: %d round trips (%d commands) for %d turns: %.1f round trips per turn (feed writes included)",
		trips, cmds, turns, float64(trips)/turns)
}

func mustGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, body := kit.Do(t, "GET", url, "", nil)
	require.Equal(t, 200, resp.StatusCode, string(body))
	return body
}
