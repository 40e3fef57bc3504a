package state

import (
	"context"
	"fmt"
	"math"

	"github.com/redis/go-redis/v9"
)

var _ EventLog = (*Redis)(nil)

// streamField is the one field of a stream entry: the record's bytes.
const streamField = "d"

// eventsKey is P:{T:S}:e, the session's stream, in the session's slot.
func (r *Redis) eventsKey(k Key) string {
	return r.prefix + ":{" + k.Tenant + ":" + k.Session + "}:e"
}

// globalEventsKey is P:events, the stream of every session's records.
func (r *Redis) globalEventsKey() string { return r.prefix + ":events" }

// AppendEvents implements EventLog with one pipeline: an XADD per record to
// the session's stream and to the global stream, each trimmed exactly to
// its bound (MAXLEN =), and a PEXPIRE of both streams to the store's TTL.
// Redis assigns the ids (XADD *), so they increase within each stream
// whichever replica appends.
func (r *Redis) AppendEvents(ctx context.Context, key Key, recs [][]byte) error {
	if err := r.check(ctx, "events"); err != nil {
		return err
	}
	if !key.Valid() {
		return ErrInvalidKey
	}
	if len(recs) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	sk, gk := r.eventsKey(key), r.globalEventsKey()
	pipe := r.client.Pipeline()
	for _, data := range recs {
		pipe.XAdd(cctx, &redis.XAddArgs{Stream: sk, MaxLen: int64(r.eventsPerSession), Values: []any{streamField, data}})
		pipe.XAdd(cctx, &redis.XAddArgs{Stream: gk, MaxLen: int64(r.eventsGlobal), Values: []any{streamField, data}})
	}
	pipe.PExpire(cctx, sk, r.ttl)
	pipe.PExpire(cctx, gk, r.ttl)
	if _, err := pipe.Exec(cctx); err != nil {
		return r.fail(ctx, "events", err)
	}
	return nil
}

// SessionEvents implements EventLog with an XRANGE from after, exclusive.
func (r *Redis) SessionEvents(ctx context.Context, key Key, after string, limit int) ([]EventRecord, error) {
	if err := r.check(ctx, "events"); err != nil {
		return nil, err
	}
	if !key.Valid() {
		return nil, ErrInvalidKey
	}
	return r.readEvents(ctx, r.eventsKey(key), after, limit)
}

// AllEvents implements EventLog with an XRANGE from after, exclusive.
func (r *Redis) AllEvents(ctx context.Context, after string, limit int) ([]EventRecord, error) {
	if err := r.check(ctx, "events"); err != nil {
		return nil, err
	}
	return r.readEvents(ctx, r.globalEventsKey(), after, limit)
}

func (r *Redis) readEvents(ctx context.Context, stream, after string, limit int) ([]EventRecord, error) {
	if err := checkAfter(after); err != nil {
		return nil, err
	}
	start := "-"
	if after != "" {
		id, _ := parseEventID(after)
		if id.ms == math.MaxUint64 && id.seq == math.MaxUint64 {
			return []EventRecord{}, nil // nothing can follow; Redis refuses "(" of the largest id
		}
		start = "(" + id.String()
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	msgs, err := r.client.XRangeN(cctx, stream, start, "+", int64(eventLimit(limit))).Result()
	if err != nil {
		return nil, r.fail(ctx, "events", err)
	}
	out := make([]EventRecord, 0, len(msgs))
	for _, m := range msgs {
		data, ok := m.Values[streamField].(string)
		if !ok {
			return nil, r.fail(ctx, "events", fmt.Errorf("stream %s entry %s has no %q field", stream, m.ID, streamField))
		}
		out = append(out, EventRecord{ID: m.ID, Data: []byte(data)})
	}
	return out, nil
}
