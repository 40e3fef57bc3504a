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

// envDeployment, when set, points every Redis store the tests make with
// newTestRedis at a Redis Cluster ("cluster:host:port,host:port,...") or at
// Redis Sentinel ("sentinel:host:port,...", master kit.SentinelMaster)
// instead of REDIS_URL. TestRedisClusterContracts and
// TestRedisSentinelContracts set it for the copy of this test binary they
// run.
const envDeployment = "SHEPHERD_TEST_REDIS_DEPLOYMENT"

// deployment is envDeployment's mode ("cluster" or "sentinel") and seeds,
// or "" and none.
func deployment() (mode string, seeds []string) {
	mode, list, ok := strings.Cut(os.Getenv(envDeployment), ":")
	if !ok || list == "" {
		return "", nil
	}
	return mode, strings.Split(list, ",")
}

// deploymentOptions sets opts for envDeployment; false when it is unset.
func deploymentOptions(opts *RedisOptions) bool {
	mode, seeds := deployment()
	if len(seeds) == 0 {
		return false
	}
	opts.Addrs = seeds
	if mode == "sentinel" {
		opts.MasterName = kit.SentinelMaster
	}
	return true
}

// redisContracts selects every store contract's Redis runner: a test named
// TestRedis<Name>Contract that makes its stores with newTestRedis (sessions,
// feed, journal, and any contract added the same way).
const redisContracts = `^TestRedis\w*Contract$`

// TestRedisClusterContracts runs every Redis store contract (redisContracts)
// against a real Redis Cluster (3 masters, 3 replicas, started by the test
// kit). A session's keys share a slot, so nothing may fail with CROSSSLOT;
// newTestRedis fails a test on any store error (OnError).
func TestRedisClusterContracts(t *testing.T) {
	if mode, _ := deployment(); mode != "" {
		t.Skip("already on a " + mode)
	}
	t.Parallel()
	c := kit.StartRedisCluster(t)
	runContractsOn(t, "cluster:"+strings.Join(c.Addrs(), ","))
}

// TestRedisSentinelContracts runs every Redis store contract against Redis
// Sentinel (a master, its replica, three sentinels, started by the test
// kit), the store finding the master through the sentinels.
func TestRedisSentinelContracts(t *testing.T) {
	if mode, _ := deployment(); mode != "" {
		t.Skip("already on a " + mode)
	}
	t.Parallel()
	s := kit.StartRedisSentinel(t)
	runContractsOn(t, "sentinel:"+strings.Join(s.SentinelAddrs(), ","))
}

// runContractsOn runs this test binary again with -test.run redisContracts
// and envDeployment set to deployment, and fails with its output unless
// every contract passed.
func runContractsOn(t *testing.T, deployment string) {
	args := []string{"-test.run", redisContracts, "-test.v", "-test.count", "1"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", time.Until(d).Round(time.Second).String())
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), envDeployment+"="+deployment)
	out, err := cmd.CombinedOutput()
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestRedis\w*Contract) `).FindAllStringSubmatch(string(out), -1)
	var names []string
	for _, m := range passed {
		names = append(names, m[1])
	}
	if err != nil || strings.Contains(string(out), "CROSSSLOT") {
		t.Fatalf("contracts on %s: %v\n%s", deployment, err, out)
	}
	t.Logf("passed: %s", strings.Join(names, ", "))
	for _, want := range []string{"TestRedisContract", "TestRedisFeedContract", "TestRedisJournalContract", "TestRedisCountersContract"} {
		assert.Contains(t, names, want)
	}
}
