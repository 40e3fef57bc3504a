package kit

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the kit's sentinels monitor.
const SentinelMaster = "mymaster"

// SentinelDownAfter is the sentinels' down-after-milliseconds: a master
// silent this long is subjectively down; with the quorum of 2 of 3 its
// replica is promoted about 2 s after a SIGKILL, all told.
const SentinelDownAfter = time.Second

// RedisSentinel is a real local Redis Sentinel deployment: a master, one
// replica and three sentinels (quorum 2) on loopback ports, in a temporary
// directory, killed when the test ends.
type RedisSentinel struct {
	Master, Replica *RedisProc
	Sentinels       []*RedisProc
}

// StartRedisSentinel starts the master, its replica and the sentinels and
// waits until the replica is in sync and every sentinel sees the replica
// and the other two sentinels. It skips the test (with the reason) only
// when redis-server is not installed.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	RedisServerBinary(t)
	dir := t.TempDir()
	s := &RedisSentinel{}
	s.Master = startRedisProc(t, dir, "master", nil, "")
	host, port, _ := net.SplitHostPort(s.Master.Addr)
	s.Replica = startRedisProc(t, dir, "replica", nil, "", "--replicaof", host, port)
	conf := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s 2\n"+
		"sentinel down-after-milliseconds %[1]s %[4]d\n"+
		"sentinel failover-timeout %[1]s 5000\n"+
		"sentinel parallel-syncs %[1]s 1\n", SentinelMaster, host, port, SentinelDownAfter.Milliseconds())
	for i := 0; i < 3; i++ {
		s.Sentinels = append(s.Sentinels, startRedisProc(t, dir, fmt.Sprintf("sentinel%d", i), nil, conf, "--sentinel"))
	}
	waitFor(t, 30*time.Second, "replica in sync, sentinels acquainted", func() string {
		info, err := s.Replica.info("replication")
		if err != nil {
			return err.Error()
		}
		if infoField(info, "master_link_status") != "up" {
			return "replica not in sync"
		}
		for _, sn := range s.Sentinels {
			m, err := sn.sentinelMaster()
			if err != nil {
				return sn.Addr + ": " + err.Error()
			}
			if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
				return fmt.Sprintf("%s sees %s replicas and %s other sentinels", sn.Addr, m["num-slaves"], m["num-other-sentinels"])
			}
		}
		return ""
	})
	return s
}

// SentinelAddrs are the sentinels' addresses.
func (s *RedisSentinel) SentinelAddrs() []string {
	var out []string
	for _, sn := range s.Sentinels {
		out = append(out, sn.Addr)
	}
	return out
}

// sentinelMaster is SENTINEL MASTER mymaster as a map.
func (p *RedisProc) sentinelMaster() (map[string]string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Master(ctx, SentinelMaster).Result()
}

// KillMaster SIGKILLs the current master, once its replica has every write
// it acknowledged (WaitReplicated), and returns it.
func (s *RedisSentinel) KillMaster(t testing.TB) *RedisProc {
	t.Helper()
	m := s.Master
	m.WaitReplicated(t)
	m.Kill()
	return m
}

// WaitPromotion waits until the replica is a master and every sentinel
// names it as the master, and returns the moment it saw that (the
// "failover done" of a failover test). Master and Replica are swapped:
// Master is the promoted one, Replica the dead one.
func (s *RedisSentinel) WaitPromotion(t testing.TB, within time.Duration) time.Time {
	t.Helper()
	waitFor(t, within, "the replica promoted", func() string {
		info, err := s.Replica.info("replication")
		if err != nil {
			return err.Error()
		}
		if infoField(info, "role") != "master" {
			return "replica not promoted yet"
		}
		for _, sn := range s.Sentinels {
			m, err := sn.sentinelMaster()
			if err != nil {
				return sn.Addr + ": " + err.Error()
			}
			if addr := net.JoinHostPort(m["ip"], m["port"]); addr != s.Replica.Addr {
				return sn.Addr + " names " + addr
			}
		}
		return ""
	})
	at := time.Now()
	s.Master, s.Replica = s.Replica, s.Master
	return at
}
