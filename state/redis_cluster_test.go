package state

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// envClusterSeeds, when set (comma-separated host:port), points every Redis
// store the tests make with newTestRedis at that Redis Cluster instead of
// REDIS_URL. TestRedisClusterContracts sets it for the copy of this test
// binary it runs.
const envClusterSeeds = "SHEPHERD_TEST_REDIS_CLUSTER"

// clusterSeeds are the seeds of envClusterSeeds, or none.
func clusterSeeds() []string {
	v := os.Getenv(envClusterSeeds)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// redisContracts selects every store contract's Redis runner: a test named
// TestRedis<Name>Contract that makes its stores with newTestRedis (sessions,
// feed, journal, and any contract added the same way).
const redisContracts = `^TestRedis\w*Contract$`

// TestRedisClusterContracts runs every Redis store contract (redisContracts)
// against a real Redis Cluster (3 masters, 3 replicas, started by the test
// kit): this test binary runs itself with -test.run redisContracts and
// envClusterSeeds set. A session's keys share a slot, so nothing may fail
// with CROSSSLOT; newTestRedis fails a test on any store error (OnError).
func TestRedisClusterContracts(t *testing.T) {
	if len(clusterSeeds()) > 0 {
		t.Skip("already on a cluster")
	}
	t.Parallel()
	c := kit.StartRedisCluster(t)
	args := []string{"-test.run", redisContracts, "-test.v", "-test.count", "1"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", time.Until(d).Round(time.Second).String())
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), envClusterSeeds+"="+strings.Join(c.Addrs(), ","))
	out, err := cmd.CombinedOutput()
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestRedis\w*Contract) `).FindAllStringSubmatch(string(out), -1)
	var names []string
	for _, m := range passed {
		names = append(names, m[1])
	}
	if err != nil || strings.Contains(string(out), "CROSSSLOT") {
		t.Fatalf("contracts on the cluster: %v\n%s", err, out)
	}
	t.Logf("passed on the cluster: %s", strings.Join(names, ", "))
	for _, want := range []string{"TestRedisContract", "TestRedisFeedContract", "TestRedisJournalContract"} {
		assert.Contains(t, names, want)
	}
}
