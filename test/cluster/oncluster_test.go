package cluster

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestOnCluster, on one cluster: Sizing (sizing_test.go), KeySlot, and
// Contention: concurrent writers of one session never lose an
// update. In the store: 3 store instances (3 replicas' worth) each make 20
// concurrent Updates of one session on the cluster, and every one lands
// (the compare-and-set retries the losers). Through the proxies: 20
// concurrent requests of one session through nginx to three proxies count
// 20 requests and 20 turns' usage, as 20 requests on one proxy do. Also:
// the kit's KeySlot agrees with the server's CLUSTER KEYSLOT.
func TestOnCluster(t *testing.T) {
	t.Parallel()
	c := kit.StartRedisCluster(t)
	ctx := context.Background()

	t.Run("Sizing", func(t *testing.T) { sizing(t, c) })

	t.Run("KeySlot", func(t *testing.T) {
		cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
		t.Cleanup(func() { _ = cl.Close() })
		for _, k := range []string{"a", "shepherd:{t:s}:s", "{}x", "{x}", "foo{bar}{baz}", "{", "}{", "x{}y{z}"} {
			want, err := cl.ClusterKeySlot(ctx, k).Result()
			require.NoError(t, err)
			assert.Equal(t, int(want), kit.KeySlot(k), "slot of %q", k)
		}
	})

	t.Run("ContentionStore", func(t *testing.T) {
		const stores, each = 3, 20
		key := state.Key{Tenant: "t", Session: "contended"}
		var wg sync.WaitGroup
		errs := make(chan error, stores*each)
		for s := range stores {
			st := clusterStore(t, c, "contention", 2*time.Second)
			for i := range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := int64(s*each + i + 1)
					_, err := st.Update(ctx, key, func(sess *state.Session) error {
						sess.Requests++
						sess.Usage.InputTokens += n
						return nil
					})
					errs <- err
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := clusterStore(t, c, "contention", 2*time.Second).Get(ctx, key)
		require.NoError(t, err)
		const total = stores * each
		assert.Equal(t, int64(total), got.Requests)
		assert.Equal(t, int64(total*(total+1)/2), got.Usage.InputTokens, "every writer's own increment landed")
		assert.Equal(t, int64(total), got.Version)
	})

	t.Run("ContentionProxies", func(t *testing.T) {
		const n = 20
		d := kit.Get(t, "anthropic")
		reply := mock.Reply{Text: "fine"}
		ref := kit.StartMock(t, mock.Options{Default: reply})
		mem := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
		t.Cleanup(func() { _ = mem.Close() })
		one := startProxy(t, ref, mem)
		m := kit.StartMock(t, mock.Options{Default: reply})
		lb, _ := replicas(t, 3, m, func() state.Store { return clusterStore(t, c, "proxies", 2*time.Second) })

		send := func(url string) {
			a := kit.NewAgent(d, url, map[string]string{"X-Session-Id": "burst"})
			a.User("the same question, all at once")
			resp, body := a.Post(t)
			assert.Equal(t, 200, resp.StatusCode, string(body))
		}
		for range n {
			send(one)
		}
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); send(lb) }()
		}
		wg.Wait()
		want, got := counts(t, one, "burst"), counts(t, lb, "burst")
		assert.Equal(t, fmt.Sprint(n), want["requests"])
		assert.Equal(t, want, got, "20 concurrent requests over 3 replicas count as 20 on one")
	})
}

// counts are a session's request count and usage as the sessions API
// shows them.
func counts(t *testing.T, url, id string) map[string]string {
	t.Helper()
	resp, body := kit.Do(t, "GET", url+"/shepherd/v1/sessions/"+id, "", nil)
	require.Equal(t, 200, resp.StatusCode, string(body))
	var v struct {
		Requests int64           `json:"requests"`
		Usage    json.RawMessage `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(body, &v))
	return map[string]string{"requests": fmt.Sprint(v.Requests), "usage": string(v.Usage)}
}
