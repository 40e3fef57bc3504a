package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var _ Approvals = (*Redis)(nil)

// approvalsKey is P:{T:S}:a, the session's approvals (field id -> JSON), in
// the session's slot.
func (r *Redis) approvalsKey(k Key) string {
	return r.prefix + ":{" + k.Tenant + ":" + k.Session + "}:a"
}

// approvalIndex is P:approvals, a sorted set of approvalMember scored by
// HeldAt (unix ms): the candidates PendingApprovals reads.
func (r *Redis) approvalIndex() string { return r.prefix + ":approvals" }

// approvalMember names an approval in the index; tenants hold no NUL.
func approvalMember(k Key, id string) string { return k.Tenant + "\x00" + k.Session + "\x00" + id }

func parseApprovalMember(m string) (Key, string) {
	t, rest, _ := strings.Cut(m, "\x00")
	s, id, _ := strings.Cut(rest, "\x00")
	return Key{Tenant: t, Session: s}, id
}

// holdSource stores an approval and makes its hash live at least until
// the approval is to be dropped.
//
//	KEYS[1]  approvals hash
//	ARGV[1]  id
//	ARGV[2]  approval JSON
//	ARGV[3]  ms the approval is kept from now
const holdSource = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
`

// decideSource replaces an approval only if it is still the one read: a
// compare-and-set, so of two racing decisions exactly one lands.
//
//	KEYS[1]  approvals hash
//	ARGV[1]  id
//	ARGV[2]  approval JSON as read
//	ARGV[3]  approval JSON as decided
//
// It returns 1 when written, 0 when the approval changed since it was read.
const decideSource = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`

var (
	holdScript   = redis.NewScript(holdSource)
	decideScript = redis.NewScript(decideSource)
)

// HoldApproval implements Approvals: the approval goes into the session's
// hash (kept ApprovalRetention past the newest ExpiresAt it holds) and the
// pending index, in one pipeline.
func (r *Redis) HoldApproval(ctx context.Context, key Key, a Approval) error {
	if err := r.check(ctx, "approvals"); err != nil {
		return err
	}
	if err := checkHold(key, a); err != nil {
		return err
	}
	a = pendingForm(key, a)
	data, err := json.Marshal(a)
	if err != nil {
		return r.fail(ctx, "approvals", fmt.Errorf("encode approval: %w", err))
	}
	keep := max(time.Until(a.ExpiresAt.Add(ApprovalRetention)), time.Second)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	pipe := r.client.Pipeline()
	// EVAL, not EVALSHA: a pipeline cannot retry a NOSCRIPT.
	hold := pipe.Eval(cctx, holdSource, []string{r.approvalsKey(key)}, a.ID, data, keep.Milliseconds())
	ix := r.approvalIndex()
	pipe.ZAdd(cctx, ix, redis.Z{Score: float64(a.HeldAt.UnixMilli()), Member: approvalMember(key, a.ID)})
	pipe.PExpire(cctx, ix, max(r.ttl, keep))
	cmds, _ := pipe.Exec(cctx) // errors are read per command below
	if err := hold.Err(); err != nil {
		return r.fail(ctx, "approvals", err)
	}
	for _, c := range cmds[1:] {
		if err := c.Err(); err != nil {
			// The approval is held; the index only lets PendingApprovals
			// list it. Report, as for the session indexes.
			r.fail(ctx, "index", err)
			break
		}
	}
	return nil
}

// DecideApproval implements Approvals: it reads the approval, decides it
// and writes it back with a compare-and-set (decideSource), re-reading when
// it changed in between; the loser of a race then reads it decided.
func (r *Redis) DecideApproval(ctx context.Context, key Key, id, decision, by, note string) (Approval, error) {
	if err := r.check(ctx, "approvals"); err != nil {
		return Approval{}, err
	}
	if err := checkDecision(key, decision); err != nil {
		return Approval{}, err
	}
	hk := r.approvalsKey(key)
	for attempt := 0; attempt < r.attempts; attempt++ {
		if attempt > 0 {
			if err := sleepCtx(ctx, backoff(attempt)); err != nil {
				return Approval{}, fmt.Errorf("state: redis decide approval: %w", err)
			}
		}
		cur, raw, err := r.readApproval(ctx, key, id)
		if err != nil {
			return Approval{}, err
		}
		decided, err := decide(cur, decision, by, note, time.Now())
		if err != nil {
			return Approval{}, err
		}
		data, err := json.Marshal(decided)
		if err != nil {
			return Approval{}, r.fail(ctx, "approvals", fmt.Errorf("encode approval: %w", err))
		}
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		n, err := decideScript.Run(cctx, r.client, []string{hk}, id, raw, data).Int()
		cancel()
		if err != nil {
			return Approval{}, r.fail(ctx, "approvals", err)
		}
		if n == 1 {
			r.unindexApprovals(ctx, []string{approvalMember(key, id)})
			return decided, nil
		}
	}
	return Approval{}, r.fail(ctx, "approvals", ErrConflict)
}

// GetApproval implements Approvals.
func (r *Redis) GetApproval(ctx context.Context, key Key, id string) (Approval, error) {
	if err := r.check(ctx, "approvals"); err != nil {
		return Approval{}, err
	}
	if !key.Valid() {
		return Approval{}, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	a, _, err := r.readApproval(ctx, key, id)
	return a, err
}

// readApproval returns the stored approval and its JSON; ErrNotFound when
// unknown or past its retention.
func (r *Redis) readApproval(ctx context.Context, key Key, id string) (Approval, string, error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	raw, err := r.client.HGet(cctx, r.approvalsKey(key), id).Result()
	if errors.Is(err, redis.Nil) {
		return Approval{}, "", fmt.Errorf("state: approval %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Approval{}, "", r.fail(ctx, "approvals", err)
	}
	var a Approval
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return Approval{}, "", r.fail(ctx, "approvals", fmt.Errorf("decode approval %q: %w", id, err))
	}
	if approvalDropped(a, time.Now()) {
		return Approval{}, "", fmt.Errorf("state: approval %q: %w", id, ErrNotFound)
	}
	return a, raw, nil
}

// PendingApprovals implements Approvals. It pages through the index,
// oldest first, reads each candidate (one pipeline per page) and keeps the
// pending, unexpired ones of tenant; candidates that are gone, decided or
// expired are removed from the index.
func (r *Redis) PendingApprovals(ctx context.Context, tenant string, limit int) ([]Approval, error) {
	if err := r.check(ctx, "approvals"); err != nil {
		return nil, err
	}
	limit = listLimit(limit)
	batch := int64(max(limit, 32))
	now := time.Now()
	out := []Approval{}
	var stale []string
	for start := int64(0); len(out) < limit; start += batch {
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		members, err := r.client.ZRange(cctx, r.approvalIndex(), start, start+batch-1).Result()
		cancel()
		if err != nil {
			return nil, r.fail(ctx, "approvals", err)
		}
		page, gone, err := r.pendingPage(ctx, members, tenant, now)
		if err != nil {
			return nil, err
		}
		out, stale = append(out, page...), append(stale, gone...)
		if int64(len(members)) < batch {
			break
		}
	}
	r.unindexApprovals(ctx, stale)
	slices.SortFunc(out, comparePending)
	return out[:min(len(out), limit)], nil
}

// pendingPage reads the index members of tenant ("" for all) in one
// pipeline: the pending ones, and the members to drop from the index.
func (r *Redis) pendingPage(ctx context.Context, members []string, tenant string, now time.Time) (pending []Approval, stale []string, err error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	pipe := r.client.Pipeline()
	cmds := make(map[string]*redis.StringCmd, len(members))
	for _, m := range members {
		key, id := parseApprovalMember(m)
		if !key.Valid() || id == "" {
			stale = append(stale, m)
			continue
		}
		if tenant == "" || key.Tenant == tenant {
			cmds[m] = pipe.HGet(cctx, r.approvalsKey(key), id)
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(cctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, r.fail(ctx, "approvals", err)
		}
	}
	for _, m := range members {
		cmd := cmds[m]
		if cmd == nil {
			continue
		}
		raw, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			stale = append(stale, m)
			continue
		}
		if err != nil {
			return nil, nil, r.fail(ctx, "approvals", err)
		}
		var a Approval
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, nil, r.fail(ctx, "approvals", fmt.Errorf("decode approval: %w", err))
		}
		if a.Decision != ApprovalPending || !now.Before(a.ExpiresAt) {
			stale = append(stale, m)
			continue
		}
		pending = append(pending, a)
	}
	return pending, stale, nil
}

// unindexApprovals removes members from the pending index, best-effort:
// PendingApprovals skips stale members anyway.
func (r *Redis) unindexApprovals(ctx context.Context, members []string) {
	if len(members) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	args := make([]any, len(members))
	for i, m := range members {
		args[i] = m
	}
	if err := r.client.ZRem(cctx, r.approvalIndex(), args...).Err(); err != nil {
		r.fail(ctx, "index", err)
	}
}
