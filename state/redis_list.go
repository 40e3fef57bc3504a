package state

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"
)

// List implements Store. It pages through the tenant's (or the global) index,
// newest first, reads each member's summary and skips members whose session
// is gone, removing them from the indexes. The result is sorted by the
// sessions' own UpdatedAt; under concurrent writes it is best-effort.
func (r *Redis) List(ctx context.Context, tenant string, limit int) ([]Summary, error) {
	if err := r.check(ctx, "list"); err != nil {
		return nil, err
	}
	if tenant != "" && !validTenant(tenant) {
		return nil, nil
	}
	limit = listLimit(limit)
	ixKey := r.globalIndex()
	if tenant != "" {
		ixKey = r.tenantIndex(tenant)
	}
	batch := int64(max(limit, 32))
	var (
		out   []Summary
		stale []Key
		seen  = make(map[Key]bool)
	)
	for start := int64(0); len(out) < limit; start += batch {
		keys, err := r.indexPage(ctx, ixKey, tenant, start, batch)
		if err != nil {
			return nil, err
		}
		sums, gone, err := r.summaries(ctx, keys)
		if err != nil {
			return nil, err
		}
		stale = append(stale, gone...)
		for i, s := range sums {
			if s != nil && !seen[keys[i]] {
				seen[keys[i]] = true
				out = append(out, *s)
			}
		}
		if int64(len(keys)) < batch {
			break
		}
	}
	r.unindex(ctx, stale)
	slices.SortStableFunc(out, func(a, b Summary) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// indexPage reads count members of an index from start, newest first.
func (r *Redis) indexPage(ctx context.Context, ixKey, tenant string, start, count int64) ([]Key, error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	members, err := r.client.ZRevRange(cctx, ixKey, start, start+count-1).Result()
	if err != nil {
		return nil, r.fail(ctx, "list", err)
	}
	keys := make([]Key, 0, len(members))
	for _, m := range members {
		k := Key{Tenant: tenant, Session: m}
		if tenant == "" {
			k = parseGlobalMember(m)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// summaries reads the summary of each key in one pipeline (split by slot in
// cluster mode). sums[i] is nil for a key whose session is gone, and such
// keys are also returned in gone; so is a key that cannot name a session.
func (r *Redis) summaries(ctx context.Context, keys []Key) (sums []*Summary, gone []Key, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	pipe := r.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		if k.Valid() {
			cmds[i] = pipe.HGet(cctx, r.sessionKey(k), fieldSummary)
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(cctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, r.fail(ctx, "list", err)
		}
	}
	sums = make([]*Summary, len(keys))
	for i, cmd := range cmds {
		if cmd == nil {
			gone = append(gone, keys[i])
			continue
		}
		raw, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			gone = append(gone, keys[i])
			continue
		}
		if err != nil {
			return nil, nil, r.fail(ctx, "list", err)
		}
		s := new(Summary)
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, nil, r.fail(ctx, "list", err)
		}
		sums[i] = s
	}
	return sums, gone, nil
}
