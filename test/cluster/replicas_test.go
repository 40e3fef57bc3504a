package cluster

import (
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
	type run struct {
		s       *session
		want    string
		lb      string
		proxies []string
	}
	var runs []*run
	for _, d := range kit.Drivers() {
		id := "scale-" + d.Name()
		m := kit.StartMock(t, mock.Options{})
		prefix := "shepherd-" + d.Name()
		lb, proxies := replicas(t, 3, m, func() state.Store { return clusterStore(t, c, prefix, time.Second) })
		runs = append(runs, &run{s: newSession(d, m, lb, id), want: reference(t, d, id, turns), lb: lb, proxies: proxies})
	}
	play := func(n int) {
		for _, r := range runs {
			for range n {
				r.s.turn(t)
			}
		}
	}
	readyz := func(want int) {
		t.Helper()
		for _, r := range runs {
			for _, p := range r.proxies {
				resp, body := kit.Do(t, "GET", p+"/readyz", "", nil)
				assert.Equal(t, want, resp.StatusCode, "readyz of %s: %s", p, body)
			}
		}
	}

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

// sessionSlot is the hash slot of the session's keys, from its tenant as
// the sessions API reports it.
func sessionSlot(t *testing.T, c *kit.RedisCluster, url string, s *session) int {
	t.Helper()
	resp, body := kit.Do(t, "GET", url+"/shepherd/v1/sessions/"+s.id, "", nil)
	require.Equal(t, 200, resp.StatusCode, string(body))
	tenant := jsonField(t, body, "tenant")
	return kit.KeySlot("x:{" + tenant + ":" + s.id + "}:s")
}
