package kit

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RedisTrips is a go-redis hook (client.AddHook) that records every round
// trip a client makes: one per command sent alone, one per pipeline, each
// as its commands' names in upper case. The commands a new connection
// sends before its first (HELLO, SELECT, CLIENT, AUTH) are left out.
type RedisTrips struct {
	mu    sync.Mutex
	trips [][]string
}

// DialHook implements redis.Hook.
func (rt *RedisTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (rt *RedisTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		rt.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (rt *RedisTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		rt.add(cmds)
		return next(ctx, cmds)
	}
}

func (rt *RedisTrips) add(cmds []redis.Cmder) {
	names := make([]string, 0, len(cmds))
	setup := true
	for _, c := range cmds {
		n := strings.ToUpper(c.Name())
		names = append(names, n)
		switch n {
		case "HELLO", "SELECT", "CLIENT", "AUTH":
		default:
			setup = false
		}
	}
	if setup {
		return
	}
	rt.mu.Lock()
	rt.trips = append(rt.trips, names)
	rt.mu.Unlock()
}

// Take returns the round trips recorded since the last Take.
func (rt *RedisTrips) Take() [][]string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	t := rt.trips
	rt.trips = nil
	return t
}

// Firsts is each round trip's first command.
func Firsts(trips [][]string) []string {
	out := make([]string, 0, len(trips))
	for _, t := range trips {
		out = append(out, t[0])
	}
	return out
}
