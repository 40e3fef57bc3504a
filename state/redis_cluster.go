package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
// ClusterStateReloadInterval (60 s by default), so without this a
// failover left every command of the failed master's slots going to a
// dead address for up to a minute after the cluster had healed (issue 18).
//
// The refresh is synchronous, inside the failed attempt, so the command's
// own retries (MaxRedirects, with backoff) already go to the new master;
// go-redis's lazy refresh would not do: it waits out a 200 ms cooldown
// after the previous one, longer than those retries. One refresh runs at a
// time (a failure during one does not wait for it) and at most one per
// minReloadGap, so an outage costs at most one CLUSTER SLOTS per 5 ms per
// client.
//
// The hook is installed on nodes cc creates from now on; for a client the
// store dials itself that is every node.
func watchCluster(cc *redis.ClusterClient) {
	r := &reloader{cluster: cc}
	cc.OnNewNode(func(node *redis.Client) {
		node.AddHook(reloadHook{r})
	})
}

// minReloadGap is the least time between two slot map refreshes.
const minReloadGap = 5 * time.Millisecond

// reloader refreshes a cluster client's slot map, one refresh at a time.
type reloader struct {
	cluster *redis.ClusterClient
	mu      sync.Mutex
	started time.Time // when the last refresh started
}

// reloadingKey marks the context of a refresh: a failure inside one (a
// dead node asked for CLUSTER SLOTS) must not start another.
type reloadingKey struct{}

// reload refreshes the map unless a refresh is under way (its map will be
// as fresh as one started now) or started less than minReloadGap ago. A
// done ctx leaves it to go-redis's lazy refresh.
func (r *reloader) reload(ctx context.Context) {
	if ctx.Value(reloadingKey{}) != nil {
		return
	}
	if ctx.Err() != nil {
		r.cluster.ReloadState(ctx)
		return
	}
	if !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	if time.Since(r.started) < minReloadGap {
		return
	}
	r.started = time.Now()
	// ForEachMaster reloads the map (CLUSTER SLOTS) before it runs fn.
	_ = r.cluster.ForEachMaster(context.WithValue(ctx, reloadingKey{}, true),
		func(context.Context, *redis.Client) error { return nil })
}

// reloadHook is the node-level hook of watchCluster.
type reloadHook struct{ r *reloader }

// DialHook leaves dials alone: a failed dial fails the command, which
// ProcessHook sees (and go-redis may dial in a goroutine of its own).
func (h reloadHook) DialHook(next redis.DialHook) redis.DialHook { return next }

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
		h.r.reload(ctx)
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
