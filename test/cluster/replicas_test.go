package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestReplicasOnCluster: for every API, a session whose turns go through
// nginx round-robin to three proxies on a Redis Cluster ends exactly as the
// same conversation on one proxy with a memory store (chapters, topic,
// ledger, usage, request count), though mid-session its slot is resharded
// (one turn while the slot is half-moved: ASK; the next after: MOVED) and
// the master serving it is SIGKILLed. Every turn succeeds; /readyz on each
// proxy is 503 while the dead master's slots cannot be served and 200 as
// soon as the cluster reports cluster_state:ok again.
func TestReplicasOnCluster(t *testing.T) {
	t.Parallel()
	c := kit.StartRedisCluster(t)
	const turns = 12
	runs, play, readyz := replicaRuns(t, turns, func(prefix string) state.Store { return clusterStore(t, c, prefix, time.Second) })

	play(4)
	readyz(200)
	for _, r := range runs {
		slot := sessionSlot(t, c, r.lb, r.s)
		c.MigrateSlot(t, slot, c.OtherMaster(t, slot), func() { r.s.turn(t) }) // ASK
		r.s.turn(t)                                                            // MOVED
	}
	play(1)

	slot := sessionSlot(t, c, runs[0].lb, runs[0].s)
	killed := c.KillMasterOf(t, slot)
	readyz(503)
	_, okAt := c.WaitPromotion(t, killed, slot, 20*time.Second)
	play(turns - runs[0].s.k)
	t.Logf("every turn served; the last %v after the cluster was ok again", time.Since(okAt).Round(time.Millisecond))
	readyz(200)

	for _, r := range runs {
		assert.Equal(t, r.want, view(t, r.lb, r.s.id), "%s: the session on 3 replicas on the cluster", r.s.d.Name())
		for _, p := range r.proxies {
			served := kit.Metrics(t, p+"/metrics").Sum("shepherd_requests_total")
			assert.Positive(t, served, "the balancer sent %s's requests to every replica", r.s.d.Name())
		}
	}
}

// TestReplicasOnSentinel: TestReplicasOnCluster's sessions on Redis
// Sentinel (a master, its replica, three sentinels): the master is
// SIGKILLed mid-session; every turn succeeds once the sentinels have
// promoted the replica, /readyz is 503 meanwhile, and each session ends
// exactly as on one proxy.
func TestReplicasOnSentinel(t *testing.T) {
	t.Parallel()
	s := kit.StartRedisSentinel(t)
	const turns = 8
	runs, play, readyz := replicaRuns(t, turns, func(prefix string) state.Store {
		st, err := state.NewRedis(state.RedisOptions{Addrs: s.SentinelAddrs(), MasterName: kit.SentinelMaster,
			KeyPrefix: prefix, TTL: time.Hour, Timeout: time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
	play(4)
	readyz(200)
	s.KillMaster(t)
	readyz(503)
	okAt := s.WaitPromotion(t, 20*time.Second)
	play(turns - 4)
	t.Logf("every turn served; the last %v after the promotion", time.Since(okAt).Round(time.Millisecond))
	readyz(200)
	for _, r := range runs {
		assert.Equal(t, r.want, view(t, r.lb, r.s.id), "%s: the session on 3 replicas on Sentinel", r.s.d.Name())
	}
}

// replicaRun is one API's session on three proxies behind nginx.
type replicaRun struct {
	s       *session
	want    string // the session's view after the conversation on one proxy
	lb      string
	proxies []string
}

// replicaRuns starts, for every API, a mock provider and three proxies
// behind nginx, each proxy with its own store from open (given the API's
// key prefix), and the reference run of turns turns. play plays n more
// turns of every session; readyz checks every proxy's /readyz status.
func replicaRuns(t *testing.T, turns int, open func(prefix string) state.Store) (runs []*replicaRun, play func(n int), readyz func(want int)) {
	for _, d := range kit.Drivers() {
		id := "scale-" + d.Name()
		m := kit.StartMock(t, mock.Options{})
		prefix := "shepherd-" + d.Name()
		lb, proxies := replicas(t, 3, m, func() state.Store { return open(prefix) })
		runs = append(runs, &replicaRun{s: newSession(d, m, lb, id), want: reference(t, d, id, turns), lb: lb, proxies: proxies})
	}
	play = func(n int) {
		for _, r := range runs {
			for range n {
				r.s.turn(t)
			}
		}
	}
	readyz = func(want int) { // all at once: right after a kill, before the promotion
		t.Helper()
		var wg sync.WaitGroup
		for _, r := range runs {
			for _, p := range r.proxies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, body := kit.Do(t, "GET", p+"/readyz", "", nil)
					assert.Equal(t, want, resp.StatusCode, "readyz of %s: %s", p, body)
				}()
			}
		}
		wg.Wait()
	}
	return runs, play, readyz
}

// sessionSlot is the hash slot of the session's keys, from its tenant as
// the sessions API reports it.
func sessionSlot(t *testing.T, c *kit.RedisCluster, url string, s *session) int {
	t.Helper()
	resp, body := kit.Do(t, "GET", url+"/shepherd/v1/sessions/"+s.id, "", nil)
	require.Equal(t, 200, resp.StatusCode, string(body))
	tenant := jsonField(t, body, "tenant")
	return kit.KeySlot("x:{" + tenant + ":" + s.id + "}:s")
}
