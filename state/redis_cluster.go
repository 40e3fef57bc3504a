package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultClusterStateReload is how old the cluster client's slot map may get
// before a command refreshes it in the background (go-redis's own default
// is 60 s). It is only a safety net: a failure that suggests the map is
// stale refreshes it at once (watchCluster).
const DefaultClusterStateReload = 5 * time.Second

// watchCluster makes cc refresh its slot map as soon as a node fails in a
// way that suggests the map is stale: it cannot be reached (a master was
// killed and its replica promoted), it answers CLUSTERDOWN, TRYAGAIN,
// MASTERDOWN, LOADING or READONLY, or a round trip times out. go-redis
// itself refreshes only on MOVED/ASK and when the map is older than
// ClusterStateReloadInterval, so without this a failover left every
// command of the failed master's slots going to a dead address until that
// interval passed (issue 18: ~60 s of "state store unavailable" after the
// cluster had healed in ~3 s).
//
// The refresh is go-redis's lazy one (a CLUSTER SLOTS in the background,
// coalesced, at most one per 200 ms), so the failing command's own retries
// (MaxRedirects, with backoff) already go to the new master.
//
// The hook is installed on nodes cc creates from now on; for a client the
// store dials itself that is every node.
func watchCluster(cc *redis.ClusterClient) {
	cc.OnNewNode(func(node *redis.Client) {
		node.AddHook(reloadHook{cluster: cc})
	})
}

// reloadHook is the node-level hook of watchCluster.
type reloadHook struct{ cluster *redis.ClusterClient }

func (h reloadHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		h.check(ctx, err)
		return conn, err
	}
}

func (h reloadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil {
			for _, c := range cmds {
				if staleMap(c.Err()) {
					err = c.Err()
					break
				}
			}
		}
		h.check(ctx, err)
		return err
	}
}

func (h reloadHook) check(ctx context.Context, err error) {
	if staleMap(err) {
		h.cluster.ReloadState(ctx)
	}
}

// staleMap reports whether err from one node suggests the cluster client's
// slot map no longer matches the cluster: anything but a reply of the
// server's own (redis.Nil, a script or type error), a caller's
// cancellation, or a MOVED/ASK (go-redis handles those).
func staleMap(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return true // unreachable, reset, timed out, pool closed
	}
	msg := re.Error()
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "LOADING", "READONLY"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// pingCluster is Ping for a cluster: it reloads the slot map (one CLUSTER
// SLOTS) and asks every master that serves slots for CLUSTER INFO, failing
// unless each answers cluster_state:ok. So it says exactly whether every
// slot can be served now: not "some node answered" (a random node's PING
// answers while a dead master's slots cannot be), and not a stale map's
// view (the map is fresh each time).
func pingCluster(ctx context.Context, cc *redis.ClusterClient) error {
	return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		info, err := node.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_state:"); ok {
				if v != "ok" {
					return fmt.Errorf("%s: cluster_state:%s", node.Options().Addr, v)
				}
				return nil
			}
		}
		return fmt.Errorf("%s: no cluster_state in CLUSTER INFO", node.Options().Addr)
	})
}
