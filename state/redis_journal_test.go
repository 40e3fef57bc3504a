package state

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedisJournalContract(t *testing.T) {
	redisURL(t)
	runJournalContract(t, func(t *testing.T, ttl time.Duration) journalHarness {
		r := newTestRedis(t, RedisOptions{TTL: ttl, Timeout: 2 * time.Second})
		return journalHarness{st: r, now: time.Now, pass: time.Sleep}
	})
}

// TestRedisJournalKeyLayout: the journal is the two keys redis.go's layout
// names, in the session's slot, with the session TTL; trimming leaves no
// stray fields; Delete removes both.
func TestRedisJournalKeyLayout(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, TTL: time.Hour})
	k := Key{Tenant: "abc123", Session: "sess-1"}
	jk, ok := prefix+":{abc123:sess-1}:j", prefix+":{abc123:sess-1}:jo"
	for i := range 4 {
		_, err := r.AppendEdits(ctx, k, 2, []EditRecord{edit("a:b.go", fmt.Sprint("call", i)), edit("x", "")})
		require.NoError(t, err)
	}
	fields, err := raw.HKeys(ctx, jk).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"n", "p:a:b.go", "p:x", "c:call2", "c:call3",
		"d:5", "m:5", "d:6", "m:6", "d:7", "m:7", "d:8", "m:8",
	}, fields, "trimmed entries leave nothing behind")
	m, err := raw.HGet(ctx, jk, "m:7").Result()
	require.NoError(t, err)
	assert.Equal(t, "6:a:b.gocall3", m)
	p, err := raw.HGet(ctx, jk, "p:a:b.go").Result()
	require.NoError(t, err)
	assert.Equal(t, "5 7", p)
	members, err := raw.ZRange(ctx, ok, 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"5", "6", "7", "8"}, members)
	d, err := raw.HGet(ctx, jk, "d:7").Result()
	require.NoError(t, err)
	assert.NotContains(t, d, `"seq"`, "the seq is the field name")
	for _, key := range []string{jk, ok} {
		ttl, err := raw.PTTL(ctx, key).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 59*time.Minute, key)
		assert.LessOrEqual(t, ttl, time.Hour, key)
		assert.Equal(t, keySlot(r.sessionKey(k)), keySlot(key), "%s in the session's slot", key)
	}
	for _, k := range []Key{{Tenant: "f00d", Session: "a{b"}, {Tenant: "x", Session: "}"}} {
		assert.Equal(t, keySlot(r.sessionKey(k)), keySlot(r.journalKey(k)))
		assert.Equal(t, keySlot(r.sessionKey(k)), keySlot(r.journalOrderKey(k)))
	}

	n, err := r.SetEditStatus(ctx, k, "call3", EditFailed, "line1\nline2")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	rec, err := r.Edit(ctx, k, 7)
	require.NoError(t, err)
	assert.Equal(t, "line1\nline2", rec.Reason, "a reason may hold newlines")

	_, err = r.Update(ctx, k, func(s *Session) error { return nil })
	require.NoError(t, err)
	require.NoError(t, r.Delete(ctx, k))
	cnt, err := raw.Exists(ctx, jk, ok).Result()
	require.NoError(t, err)
	assert.Zero(t, cnt, "Delete removes the journal")
}

// TestRedisJournalCorrupt: an entry that does not decode is a store
// failure, reported to OnError.
func TestRedisJournalCorrupt(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	var ops []string
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, OnError: func(op string, err error) { ops = append(ops, op) }})
	k := Key{Tenant: "t", Session: "s"}
	_, err := r.AppendEdits(ctx, k, 10, []EditRecord{edit("a", "c")})
	require.NoError(t, err)
	require.NoError(t, raw.HSet(ctx, prefix+":{t:s}:j", "d:1", "{not json").Err())
	_, err = r.Edit(ctx, k, 1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNotFound)
	_, err = r.Edits(ctx, k, "")
	require.Error(t, err)
	assert.Equal(t, []string{"journal", "journal"}, ops)
}

// TestRedisJournalBigEntries: a session's worth of large entries appends
// and reads back within the default timeout's order of magnitude.
func TestRedisJournalBigEntries(t *testing.T) {
	ctx := context.Background()
	r := newTestRedis(t, RedisOptions{})
	k := Key{Tenant: "t", Session: "big"}
	body := strings.Repeat("line of a source file\n", 2000) // 44 KB
	for i := range 30 {
		_, err := r.AppendEdits(ctx, k, 10, []EditRecord{{Path: fmt.Sprint("f", i%5), Before: &body, After: &body, BeforeKnown: true}})
		require.NoError(t, err)
	}
	all, err := r.Edits(ctx, k, "")
	require.NoError(t, err)
	require.Len(t, all, 30)
	assert.Equal(t, body, *all[29].After)
}
