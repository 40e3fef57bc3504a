package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// casSource writes a session only if its version is still the one read.
//
//	KEYS[1]  session hash
//	ARGV[1]  expected version ("" when the session did not exist)
//	ARGV[2]  new version
//	ARGV[3]  write token, unique per attempt
//	ARGV[4]  session JSON
//	ARGV[5]  summary JSON
//	ARGV[6]  TTL in ms
//
//	KEYS[2]  (optional) the session's counters hash (countersKey)
//	ARGV[7…] with KEYS[2]: the counter changes staged on the session
//	         (CounterOp), three arguments each: "a", name, n (HINCRBY
//	         c:name n) or "s", name, signature (a Streak step)
//
// The counter changes are applied only when the session is written, in
// the same script, and refresh the counters' TTL.
//
// It returns 1 when written and 0 on a version mismatch. A mismatch whose
// stored token is ours means this very write already landed and the reply
// was lost (go-redis resends a command after a network error), so that also
// returns 1 instead of making Update apply fn twice.
const casSource = `
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then cur = '' end
if cur ~= ARGV[1] then
  if redis.call('HGET', KEYS[1], 'w') == ARGV[3] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'w', ARGV[3], 'd', ARGV[4], 'm', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
if KEYS[2] then
  for i = 7, #ARGV, 3 do
    local f = 'c:' .. ARGV[i+1]
    if ARGV[i] == 'a' then
      redis.call('HINCRBY', KEYS[2], f, ARGV[i+2])
    else
      local s = 's:' .. ARGV[i+1]
      if redis.call('HGET', KEYS[2], s) == ARGV[i+2] then
        redis.call('HINCRBY', KEYS[2], f, 1)
      else
        redis.call('HSET', KEYS[2], s, ARGV[i+2], f, 1)
      end
    end
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
end
return 1
`

// staleSlack is how far past the TTL an index member is kept before Update
// trims it, allowing for clock skew between replicas.
const staleSlack = time.Minute

// Update implements Store. fn may run several times, once per attempt, each
// time on a freshly decoded session. A timeout or network error during the
// final write is ambiguous: the write may or may not have been applied.
func (r *Redis) Update(ctx context.Context, key Key, fn func(*Session) error) (*Session, error) {
	s, err := r.update(ctx, key, fn)
	r.pin(key, s, err)
	return s, err
}

// pin records the outcome of a write of key in the pinned sessions: the
// session as stored, or, on an error (which may leave the write applied or
// not), no entry, so that the next Get reads Redis.
func (r *Redis) pin(key Key, s *Session, err error) {
	switch {
	case r.pinned == nil:
	case err != nil || s == nil:
		r.pinned.drop(key)
	default:
		r.pinned.put(key, s)
	}
}

func (r *Redis) update(ctx context.Context, key Key, fn func(*Session) error) (*Session, error) {
	if err := r.check(ctx, "update"); err != nil {
		return nil, err
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	for attempt := 0; attempt < r.attempts; attempt++ {
		if attempt > 0 {
			if err := sleepCtx(ctx, backoff(attempt)); err != nil {
				return nil, fmt.Errorf("state: redis update: %w", err)
			}
		}
		s, ok, err := r.tryUpdate(ctx, key, fn)
		if err != nil || ok {
			return s, err
		}
	}
	return nil, r.fail(ctx, "update", ErrConflict)
}

// tryUpdate makes one read-modify-CAS attempt; ok is false when another
// writer won the race.
func (r *Redis) tryUpdate(ctx context.Context, key Key, fn func(*Session) error) (s *Session, ok bool, err error) {
	k := r.sessionKey(key)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	vals, err := r.client.HMGet(cctx, k, fieldVersion, fieldData).Result()
	cancel()
	if err != nil {
		return nil, false, r.fail(ctx, "update", err)
	}
	expected, _ := vals[0].(string)
	var version int64
	if expected != "" {
		if version, err = strconv.ParseInt(expected, 10, 64); err != nil {
			return nil, false, r.fail(ctx, "update", fmt.Errorf("decode version: %w", err))
		}
	}
	now := time.Now().UTC().Round(0)
	s = &Session{ID: key.Session, Tenant: key.Tenant, CreatedAt: now}
	if data, _ := vals[1].(string); data != "" {
		if err := decodeRecord([]byte(data), s); err != nil {
			if errors.Is(err, ErrRecordVersion) {
				return nil, false, fmt.Errorf("state: redis update: %w", err)
			}
			return nil, false, r.fail(ctx, "update", fmt.Errorf("decode session: %w", err))
		}
	}
	return r.commit(ctx, key, expected, version, s, fn)
}

// commit applies fn to s, read at version (expected is the stored "v"
// field, "" for a new session), and writes it with a compare-and-set. The
// CAS and the index update go in one pipeline: one round trip. ok is false
// when the session changed since it was read.
func (r *Redis) commit(ctx context.Context, key Key, expected string, version int64, s *Session, fn func(*Session) error) (*Session, bool, error) {
	created, before := s.CreatedAt, s.Usage
	if err := fn(s); err != nil {
		return nil, false, fmt.Errorf("state: update: %w", err)
	}
	ops := s.takeStaged(before)
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("state: redis update: %w", err)
	}
	s.ID, s.Tenant, s.CreatedAt = key.Session, key.Tenant, created
	s.Version = version + 1
	s.UpdatedAt = time.Now().UTC().Round(0)
	data, summary, err := encodeRecordSummary(s)
	if err != nil {
		return nil, false, r.fail(ctx, "update", fmt.Errorf("encode session: %w", err))
	}
	sum, err := json.Marshal(summary)
	if err != nil {
		return nil, false, r.fail(ctx, "update", fmt.Errorf("encode summary: %w", err))
	}
	token := strconv.FormatUint(rand.Uint64(), 36)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	pipe := r.client.Pipeline()
	// EVAL, not EVALSHA: a pipeline cannot retry a NOSCRIPT; Redis caches
	// the compiled script by its hash either way.
	keys := []string{r.sessionKey(key)}
	args := []any{expected, s.Version, token, data, sum, r.ttl.Milliseconds()}
	if opArgs := counterOpArgs(ops); len(opArgs) > 0 {
		keys = append(keys, r.countersKey(key))
		args = append(args, opArgs...)
	}
	cas := pipe.Eval(cctx, casSource, keys, args...)
	r.queueIndex(cctx, pipe, key, s.UpdatedAt)
	cmds, _ := pipe.Exec(cctx) // errors are read per command below
	n, err := cas.Int()
	if err != nil {
		return nil, false, r.fail(ctx, "update", err)
	}
	if n != 1 {
		return nil, false, nil
	}
	landed(ops, s.Version)
	for _, c := range cmds[min(1, len(cmds)):] {
		if err := c.Err(); err != nil {
			r.fail(ctx, "index", err)
			break
		}
	}
	return s, true, nil
}

// UpdateFrom is Update for a caller that already holds the session as
// stored (base, from Get; nil when Get found none): it skips the read and
// goes straight to the compare-and-set, so the whole update is one round
// trip. If the session changed since base was read, it falls back to
// Update. base is not modified.
func (r *Redis) UpdateFrom(ctx context.Context, key Key, base *Session, fn func(*Session) error) (*Session, error) {
	if err := r.check(ctx, "update"); err != nil {
		return nil, err
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	expected, version := "", int64(0)
	s := &Session{ID: key.Session, Tenant: key.Tenant, CreatedAt: time.Now().UTC().Round(0)}
	if base != nil {
		s = base.clone()
		version = base.Version
		expected = strconv.FormatInt(version, 10)
	}
	out, ok, err := r.commit(ctx, key, expected, version, s, fn)
	if err != nil || ok {
		r.pin(key, out, err)
		return out, err
	}
	if r.pinned != nil {
		// Another process wrote the session since base: with pinned
		// sessions, the request was built from an older one than Redis had.
		r.pinned.stale.Add(1)
	}
	return r.Update(ctx, key, fn)
}

// queueIndex queues, on pipe, the commands that record key in the tenant
// and global indexes and trim members older than the TTL. Their failures
// are reported to OnError, not returned: the session itself is written, and
// List copes with a stale index.
func (r *Redis) queueIndex(ctx context.Context, pipe redis.Pipeliner, key Key, at time.Time) {
	ms := at.UnixMilli()
	cutoff := "(" + strconv.FormatInt(ms-(r.ttl+staleSlack).Milliseconds(), 10)
	ttl := r.ttl + staleSlack
	for _, ix := range []struct{ key, member string }{
		{r.tenantIndex(key.Tenant), key.Session},
		{r.globalIndex(), globalMember(key)},
	} {
		pipe.ZAddGT(ctx, ix.key, redis.Z{Score: float64(ms), Member: ix.member})
		pipe.ZRemRangeByScore(ctx, ix.key, "-inf", cutoff)
		pipe.PExpire(ctx, ix.key, ttl)
	}
}

// unindex removes keys from both indexes, best-effort like index.
func (r *Redis) unindex(ctx context.Context, keys []Key) {
	if len(keys) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	pipe := r.client.Pipeline()
	global := make([]any, 0, len(keys))
	for _, k := range keys {
		pipe.ZRem(cctx, r.tenantIndex(k.Tenant), k.Session)
		global = append(global, globalMember(k))
	}
	pipe.ZRem(cctx, r.globalIndex(), global...)
	if _, err := pipe.Exec(cctx); err != nil {
		r.fail(ctx, "index", err)
	}
}

// backoff returns a jittered wait before retry attempt n (n >= 1): uniform
// in [0, min(0.5ms * 2^n, 20ms)).
func backoff(n int) time.Duration {
	limit := min(500*time.Microsecond<<min(n, 10), 20*time.Millisecond)
	return rand.N(limit)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
