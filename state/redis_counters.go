package state

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

var _ Counters = (*Redis)(nil)

// countersKey is P:{T:S}:b, the session's budget counters, a hash in the
// session's slot. Its fields:
//
//	c:<name>   the counter's value (a streak's length)
//	s:<name>   the signature the streak <name> last recorded
//
// Every change refreshes the key's TTL (the store's session TTL); Delete
// removes it with the session.
func (r *Redis) countersKey(k Key) string {
	return r.prefix + ":{" + k.Tenant + ":" + k.Session + "}:b"
}

// reserveSource adds n to a counter only if it stays within the limit.
//
//	KEYS[1]  counters hash
//	ARGV[1]  name   ARGV[2]  n   ARGV[3]  limit (<= 0: none)   ARGV[4]  TTL in ms
//
// It returns {value, 1} when added, {value unchanged, 0} when refused (a
// refusal changes nothing, the TTL included).
const reserveSource = `
local f = 'c:' .. ARGV[1]
local cur = tonumber(redis.call('HGET', KEYS[1], f) or '0')
local n, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
if limit > 0 and cur + n > limit then return {cur, 0} end
local v = redis.call('HINCRBY', KEYS[1], f, n)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {v, 1}
`

// addSource adds n to a counter.
//
//	KEYS[1]  counters hash
//	ARGV[1]  name   ARGV[2]  n   ARGV[3]  TTL in ms
const addSource = `
local v = redis.call('HINCRBY', KEYS[1], 'c:' .. ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return v
`

// streakSource records one occurrence of a signature under a streak.
//
//	KEYS[1]  counters hash
//	ARGV[1]  name   ARGV[2]  signature   ARGV[3]  TTL in ms
//
// It returns the streak's length after the call.
const streakSource = `
local f, s = 'c:' .. ARGV[1], 's:' .. ARGV[1]
local v = 1
if redis.call('HGET', KEYS[1], s) == ARGV[2] then
  v = redis.call('HINCRBY', KEYS[1], f, 1)
else
  redis.call('HSET', KEYS[1], s, ARGV[2], f, 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return v
`

var (
	reserveScript = redis.NewScript(reserveSource)
	addScript     = redis.NewScript(addSource)
	streakScript  = redis.NewScript(streakSource)
)

// Reserve implements Counters with one script.
func (r *Redis) Reserve(ctx context.Context, key Key, name string, n, limit int64) (int64, bool, error) {
	if err := r.counterCheck(ctx, key); err != nil {
		return 0, false, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	vals, err := reserveScript.Run(cctx, r.client, []string{r.countersKey(key)}, name, n, limit, r.ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, false, r.fail(ctx, "counters", err)
	}
	if len(vals) != 2 {
		return 0, false, r.fail(ctx, "counters", fmt.Errorf("reserve answered %d values", len(vals)))
	}
	return vals[0], vals[1] == 1, nil
}

// Add implements Counters with one script.
func (r *Redis) Add(ctx context.Context, key Key, name string, n int64) (int64, error) {
	if err := r.counterCheck(ctx, key); err != nil {
		return 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := addScript.Run(cctx, r.client, []string{r.countersKey(key)}, name, n, r.ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, r.fail(ctx, "counters", err)
	}
	return v, nil
}

// Streak implements Counters with one script.
func (r *Redis) Streak(ctx context.Context, key Key, name, sig string) (int64, error) {
	if err := r.counterCheck(ctx, key); err != nil {
		return 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := streakScript.Run(cctx, r.client, []string{r.countersKey(key)}, name, sig, r.ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, r.fail(ctx, "counters", err)
	}
	return v, nil
}

// ReadCounters implements Counters with one HGETALL.
func (r *Redis) ReadCounters(ctx context.Context, key Key) (map[string]int64, error) {
	if err := r.counterCheck(ctx, key); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	fields, err := r.client.HGetAll(cctx, r.countersKey(key)).Result()
	if err != nil {
		return nil, r.fail(ctx, "counters", err)
	}
	snap, err := decodeCounters(fields)
	if err != nil {
		return nil, r.fail(ctx, "counters", err)
	}
	return snap.Values, nil
}

func (r *Redis) counterCheck(ctx context.Context, key Key) error {
	if err := r.check(ctx, "counters"); err != nil {
		return err
	}
	if !key.Valid() {
		return ErrInvalidKey
	}
	return nil
}

// counterOpArgs are the CAS script's arguments for ops (see casSource);
// adds of 0 are left out.
func counterOpArgs(ops []CounterOp) []any {
	var args []any
	for _, op := range ops {
		switch {
		case op.Sig != "":
			args = append(args, "s", op.Name, op.Sig)
		case op.N != 0:
			args = append(args, "a", op.Name, op.N)
		}
	}
	return args
}

// PrefetchCounters implements CounterPrefetcher: from then on Get reads
// the counters hash in the same pipeline as the session (HGET and
// HGETALL, one round trip).
func (r *Redis) PrefetchCounters() { r.prefetch.Store(true) }

// decodeCounters reads the counters hash's fields into a snapshot.
func decodeCounters(fields map[string]string) (*CounterSnapshot, error) {
	snap := &CounterSnapshot{Values: make(map[string]int64, len(fields)), Sigs: map[string]string{}}
	for f, v := range fields {
		if name, ok := strings.CutPrefix(f, "s:"); ok {
			snap.Sigs[name] = v
			continue
		}
		name, ok := strings.CutPrefix(f, "c:")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("counter %q: %w", name, err)
		}
		snap.Values[name] = n
	}
	return snap, nil
}
