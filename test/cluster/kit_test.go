package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestKitCluster: the kit's cluster is a working 3+3 cluster; KeySlot
// agrees with the server's CLUSTER KEYSLOT; a slot migration moves keys;
// a killed master's replica takes over.
func TestKitCluster(t *testing.T) {
	t.Parallel()
	c := kit.StartRedisCluster(t)
	require.Len(t, c.Addrs(), 6)
	ctx := context.Background()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cl.Close() })
	for _, k := range []string{"a", "shepherd:{t:s}:s", "{}x", "{x}", "foo{bar}{baz}", "{", "}{"} {
		want, err := cl.ClusterKeySlot(ctx, k).Result()
		require.NoError(t, err)
		assert.Equal(t, int(want), kit.KeySlot(k), "slot of %q", k)
	}

	key := "kit:{migrate}"
	slot := kit.KeySlot(key)
	require.NoError(t, cl.Set(ctx, key, "v", 0).Err())
	to := c.OtherMaster(t, slot)
	c.MigrateSlot(t, slot, to, func() {
		require.NoError(t, cl.Set(ctx, key+"2", "w", 0).Err(), "a write mid-migration (ASK)")
	})
	assert.Equal(t, to, c.MasterOf(t, slot))
	v, err := cl.Get(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	killed := c.KillMasterOf(t, slot)
	start := time.Now()
	m, okAt := c.WaitPromotion(t, killed, slot, 20*time.Second)
	t.Logf("replica %s took over from %s in %s", m.Addr, killed.Addr, okAt.Sub(start).Round(time.Millisecond))
	assert.NotEqual(t, killed, m)
	assert.Len(t, c.Addrs(), 5)
}
