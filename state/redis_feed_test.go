package state

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedisFeedContract(t *testing.T) {
	redisURL(t)
	runFeedContract(t, func(t *testing.T, o feedOptions) feedHarness {
		r := newTestRedis(t, RedisOptions{TTL: o.ttl, Timeout: 2 * time.Second, EventsPerSession: o.perSession, EventsGlobal: o.glob})
		return feedHarness{st: r, now: time.Now, pass: time.Sleep}
	})
}

// TestRedisFeedKeyLayout: the streams, the approvals hash and the pending
// index are where redis.go's layout says, with their TTLs.
func TestRedisFeedKeyLayout(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, TTL: time.Hour, EventsPerSession: 3})
	k := Key{Tenant: "abc123", Session: "sess-1"}
	require.NoError(t, r.AppendEvents(ctx, k, [][]byte{[]byte("1"), []byte("2"), []byte("3"), []byte("4")}))

	ek := prefix + ":{abc123:sess-1}:e"
	n, err := raw.XLen(ctx, ek).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 3, n, "trimmed exactly to EventsPerSession")
	n, err = raw.XLen(ctx, prefix+":events").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 4, n)
	for _, key := range []string{ek, prefix + ":events"} {
		ttl, err := raw.PTTL(ctx, key).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 59*time.Minute, key)
		assert.LessOrEqual(t, ttl, time.Hour, key)
	}

	a := testApproval("call-1", time.Now(), 10*time.Minute)
	require.NoError(t, r.HoldApproval(ctx, k, a))
	ak := prefix + ":{abc123:sess-1}:a"
	v, err := raw.HGet(ctx, ak, "call-1").Result()
	require.NoError(t, err)
	assert.Contains(t, v, `"call_id":"toolu_call-1"`)
	ttl, err := raw.PTTL(ctx, ak).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 14*time.Minute, "kept ApprovalRetention past ExpiresAt")
	assert.LessOrEqual(t, ttl, 10*time.Minute+ApprovalRetention)
	score, err := raw.ZScore(ctx, prefix+":approvals", "abc123\x00sess-1\x00call-1").Result()
	require.NoError(t, err)
	assert.Equal(t, float64(a.HeldAt.UnixMilli()), score)

	// A shorter approval does not shorten the hash's life.
	require.NoError(t, r.HoldApproval(ctx, k, testApproval("call-2", time.Now(), time.Second)))
	ttl, err = raw.PTTL(ctx, ak).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 14*time.Minute)

	// Deciding removes the index member.
	_, err = r.DecideApproval(ctx, k, "call-1", ApprovalApproved, "api", "")
	require.NoError(t, err)
	_, err = raw.ZScore(ctx, prefix+":approvals", "abc123\x00sess-1\x00call-1").Result()
	assert.Error(t, err, "decided: no longer indexed")

	_, err = r.Update(ctx, k, func(s *Session) error { return nil })
	require.NoError(t, err)
	require.NoError(t, r.Delete(ctx, k))
	n, err = raw.Exists(ctx, prefix+":{abc123:sess-1}:s", ek, ak).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Delete removes the session, its stream and its approvals")
}

// TestRedisSessionKeysShareASlot: every key of one session carries the
// same hash tag, so in cluster mode they live in one slot (Delete's
// multi-key DEL needs it).
func TestRedisSessionKeysShareASlot(t *testing.T) {
	r, err := NewRedis(RedisOptions{URL: "redis://127.0.0.1:1/0", KeyPrefix: "P"})
	require.NoError(t, err)
	defer r.Close()
	for _, k := range []Key{{Tenant: "abc123", Session: "sess-1"}, {Tenant: "f00d", Session: "a{b"}, {Tenant: "x", Session: "}"}} {
		keys := []string{r.sessionKey(k), r.eventsKey(k), r.approvalsKey(k)}
		want := keySlot(keys[0])
		for _, key := range keys {
			assert.Equal(t, want, keySlot(key), "%q", key)
			assert.Equal(t, "{"+k.Tenant+":", key[len("P:"):len("P:")+len(k.Tenant)+2], "%q starts with the tag", key)
		}
	}
	// The computation agrees with Redis (CLUSTER KEYSLOT's documented values).
	assert.Equal(t, 12182, keySlot("foo"))
	assert.Equal(t, keySlot("{user1000}.following"), keySlot("{user1000}.followers"))
	assert.Equal(t, 0x31C3%16384, keySlot("123456789"))

	// With a live server in cluster mode, ask it too.
	raw := rawRedis(t)
	if got, err := raw.ClusterKeySlot(context.Background(), "foo").Result(); err == nil {
		assert.EqualValues(t, 12182, got)
	}
}

// keySlot is Redis Cluster's HASH_SLOT: CRC16 (XMODEM) of the hash tag (the
// text between the first '{' and the next '}', when not empty) or the
// whole key, modulo 16384.
func keySlot(key string) int {
	if i := indexByte(key, '{'); i >= 0 {
		if j := indexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
