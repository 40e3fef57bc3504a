package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redisURL returns REDIS_URL or skips the test. make test (scripts/test.sh)
// always sets it, starting a private redis-server when needed.
func redisURL(t *testing.T) string {
	t.Helper()
	if _, seeds := deployment(); len(seeds) > 0 {
		return "redis://" + seeds[0] + "/0" // only a guard here: stores use the seeds
	}
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Skip("REDIS_URL not set; run `make test`, which starts a private redis-server, or point REDIS_URL at a scratch Redis")
	}
	return u
}

// rawRedis returns a plain client for inspecting keys, closed at cleanup.
func rawRedis(t *testing.T) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(redisURL(t))
	require.NoError(t, err)
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testPrefix returns a key prefix unique to this test and deletes every key
// under it when the test ends, so tests can share one server in parallel.
func testPrefix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	prefix := "shepherd-test-" + hex.EncodeToString(b)
	if mode, _ := deployment(); mode != "" {
		return prefix // a throwaway deployment (redis_deployment_test.go): nothing to clean
	}
	raw := rawRedis(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := raw.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleanup scan: %v", err)
			return
		}
		if len(keys) > 0 {
			if err := raw.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup del: %v", err)
			}
		}
	})
	return prefix
}

func newTestRedis(t *testing.T, opts RedisOptions) *Redis {
	t.Helper()
	if opts.URL == "" && opts.Client == nil && !deploymentOptions(&opts) {
		opts.URL = redisURL(t)
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = testPrefix(t)
	}
	if opts.OnError == nil {
		opts.OnError = func(op string, err error) { t.Errorf("OnError(%q, %v)", op, err) }
	}
	if opts.Timeout == 0 {
		// Generous: -race on a busy 2-core machine can stall a round trip
		// past the 200 ms default; tests of the timeout set their own.
		opts.Timeout = 2 * time.Second
	}
	r, err := NewRedis(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRedisContract(t *testing.T) {
	redisURL(t)
	runContract(t, func(t *testing.T, ttl time.Duration) (Store, func(time.Duration)) {
		// A generous per-call timeout: -race on a busy machine is slow, and
		// timeouts have their own test.
		return newTestRedis(t, RedisOptions{TTL: ttl, Timeout: 2 * time.Second}), time.Sleep
	})
}

func TestRedisKeyLayout(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, TTL: time.Hour})
	k := Key{Tenant: "abc123", Session: "sess-1"}
	s, err := r.Update(ctx, k, func(s *Session) error { s.SetSlot("notes", noteSlot("x")); return nil })
	require.NoError(t, err)

	sk := prefix + ":{abc123:sess-1}:s"
	fields, err := raw.HGetAll(ctx, sk).Result()
	require.NoError(t, err)
	assert.Equal(t, "1", fields["v"])
	assert.Contains(t, fields["d"], `"slots":{"notes":{"v":1,"data":"x","note":"x"}}`)
	assert.Contains(t, fields["m"], `"notes":{"notes":"x"}`)
	assert.NotEmpty(t, fields["w"])
	ttl, err := raw.PTTL(ctx, sk).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Minute)
	assert.LessOrEqual(t, ttl, time.Hour)

	score, err := raw.ZScore(ctx, prefix+":idx:abc123", "sess-1").Result()
	require.NoError(t, err)
	assert.Equal(t, float64(s.UpdatedAt.UnixMilli()), score)
	score, err = raw.ZScore(ctx, prefix+":idx", "abc123\x00sess-1").Result()
	require.NoError(t, err)
	assert.Equal(t, float64(s.UpdatedAt.UnixMilli()), score)
	for _, ix := range []string{prefix + ":idx:abc123", prefix + ":idx"} {
		ttl, err := raw.PTTL(ctx, ix).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Hour, "index %s outlives its newest session", ix)
	}

	require.NoError(t, r.Delete(ctx, k))
	n, err := raw.Exists(ctx, sk, prefix+":idx:abc123", prefix+":idx").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Delete removes the session and its index entries")
}

func TestRedisListPrunesStaleIndex(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix})
	var keys []Key
	for i := range 5 {
		k := Key{Tenant: "t", Session: fmt.Sprint(i)}
		keys = append(keys, k)
		_, err := r.Update(ctx, k, func(*Session) error { return nil })
		require.NoError(t, err)
	}
	// Sessions vanish behind the index's back (as on expiry).
	require.NoError(t, raw.Del(ctx, r.sessionKey(keys[4]), r.sessionKey(keys[2])).Err())
	list, err := r.List(ctx, "t", 2)
	require.NoError(t, err)
	assert.Equal(t, []Key{keys[3], keys[1]}, summaryKeys(list), "limit counts live sessions only")
	list, err = r.List(ctx, "", 0)
	require.NoError(t, err)
	assert.Equal(t, []Key{keys[3], keys[1], keys[0]}, summaryKeys(list))

	members, err := raw.ZRange(ctx, prefix+":idx:t", 0, -1).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"0", "1", "3"}, members)
	members, err = raw.ZRange(ctx, prefix+":idx", 0, -1).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"t\x000", "t\x001", "t\x003"}, members)
}

func TestRedisUpdateTrimsOldIndexMembers(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, TTL: time.Second})
	old := time.Now().Add(-time.Hour).UnixMilli()
	require.NoError(t, raw.ZAdd(ctx, prefix+":idx:t", redis.Z{Score: float64(old), Member: "gone"}).Err())
	require.NoError(t, raw.ZAdd(ctx, prefix+":idx", redis.Z{Score: float64(old), Member: "t\x00gone"}).Err())
	_, err := r.Update(ctx, Key{Tenant: "t", Session: "s"}, func(*Session) error { return nil })
	require.NoError(t, err)
	for _, ix := range []string{prefix + ":idx:t", prefix + ":idx"} {
		n, err := raw.ZCard(ctx, ix).Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, ix)
	}
}

// Several stores sharing a prefix are replicas sharing sessions: their
// concurrent Updates of one key must not lose a write either.
func TestRedisReplicasLoseNothing(t *testing.T) {
	ctx := context.Background()
	prefix := testPrefix(t)
	const replicas, workers, each = 4, 5, 10
	k := Key{Tenant: "t", Session: "shared"}
	var wg sync.WaitGroup
	for range replicas {
		r := newTestRedis(t, RedisOptions{KeyPrefix: prefix, Timeout: 2 * time.Second})
		for range workers {
			wg.Go(func() {
				for range each {
					_, err := r.Update(ctx, k, func(s *Session) error { s.Requests++; return nil })
					assert.NoError(t, err)
				}
			})
		}
	}
	wg.Wait()
	r := newTestRedis(t, RedisOptions{KeyPrefix: prefix})
	got, err := r.Get(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, int64(replicas*workers*each), got.Requests)
	assert.Equal(t, int64(replicas*workers*each), got.Version)
}

// A resent CAS whose first copy landed (reply lost) reports success without
// writing again.
func TestRedisCASIsIdempotentPerToken(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	key := testPrefix(t) + ":{t:s}:s"
	run := func(expected, version, token, data string) int {
		n, err := raw.Eval(ctx, casSource, []string{key}, expected, version, token, data, "{}", 60000).Int()
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 1, run("", "1", "tok1", "first"))
	assert.Equal(t, 1, run("", "1", "tok1", "first"), "replay of the same write")
	assert.Equal(t, 0, run("", "1", "tok2", "other"), "a different writer loses")
	assert.Equal(t, 1, run("1", "2", "tok3", "second"))
	d, err := raw.HGet(ctx, key, "d").Result()
	require.NoError(t, err)
	assert.Equal(t, "second", d)
}

func TestRedisCorruptSession(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	var mu sync.Mutex
	var ops []string
	r := newTestRedis(t, RedisOptions{OnError: func(op string, _ error) {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op)
	}})
	k := Key{Tenant: "t", Session: "s"}
	require.NoError(t, raw.HSet(ctx, r.sessionKey(k), "v", "1", "d", "{not json").Err())
	_, err := r.Get(ctx, k)
	assert.ErrorContains(t, err, "decode session")
	_, err = r.Update(ctx, k, func(*Session) error { return nil })
	assert.ErrorContains(t, err, "decode session")
	mu.Lock()
	assert.Equal(t, []string{"get", "update"}, ops)
	mu.Unlock()
	require.NoError(t, r.Delete(ctx, k), "a corrupt session can be deleted")
	_, err = r.Update(ctx, k, func(*Session) error { return nil })
	assert.NoError(t, err)
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// An unreachable server gives errors (not hangs, not ErrNotFound) within
// about the per-call timeout, each reported to OnError. Needs no Redis.
func TestRedisUnreachable(t *testing.T) {
	ctx := context.Background()
	const timeout = 200 * time.Millisecond
	var mu sync.Mutex
	var ops []string
	r, err := NewRedis(RedisOptions{
		URL:     "redis://" + closedPort(t) + "/0",
		Timeout: timeout,
		OnError: func(op string, err error) {
			mu.Lock()
			defer mu.Unlock()
			ops = append(ops, op)
		},
	})
	require.NoError(t, err, "NewRedis does not dial")
	defer r.Close()
	k := Key{Tenant: "t", Session: "s"}
	calls := []struct {
		op   string
		call func() error
	}{
		{"get", func() error { _, err := r.Get(ctx, k); return err }},
		{"update", func() error {
			_, err := r.Update(ctx, k, func(*Session) error { return nil })
			return err
		}},
		{"delete", func() error { return r.Delete(ctx, k) }},
		{"list", func() error { _, err := r.List(ctx, "", 0); return err }},
		{"ping", func() error { return r.Ping(ctx) }},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call()
		elapsed := time.Since(start)
		require.Error(t, err, c.op)
		assert.NotErrorIs(t, err, ErrNotFound, c.op)
		assert.True(t, strings.HasPrefix(err.Error(), "state: "), "%s: %v", c.op, err)
		assert.Less(t, elapsed, timeout+time.Second, "%s took %v", c.op, elapsed)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"get", "update", "delete", "list", "ping"}, ops)
}

// A caller's own cancellation is not a store failure.
func TestRedisCallerCancelNotCounted(t *testing.T) {
	r, err := NewRedis(RedisOptions{
		URL:     "redis://" + closedPort(t) + "/0",
		OnError: func(op string, err error) { t.Errorf("OnError(%q, %v)", op, err) },
	})
	require.NoError(t, err)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, r.Ping(ctx), context.DeadlineExceeded)
}

func TestNewRedisOptions(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		r, err := NewRedis(RedisOptions{URL: "redis://127.0.0.1:1/2"})
		require.NoError(t, err)
		defer r.Close()
		assert.Equal(t, DefaultRedisTimeout, r.timeout)
		assert.Equal(t, DefaultRedisKeyPrefix, r.prefix)
		assert.Equal(t, DefaultTTL, r.ttl)
		assert.Equal(t, DefaultRedisMaxAttempts, r.attempts)
		require.IsType(t, &redis.Client{}, r.client)
		o := r.client.(*redis.Client).Options()
		assert.Equal(t, "127.0.0.1:1", o.Addr)
		assert.Equal(t, 2, o.DB)
		assert.True(t, o.ContextTimeoutEnabled)
	})
	t.Run("cluster", func(t *testing.T) {
		r, err := NewRedis(RedisOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}})
		require.NoError(t, err)
		defer r.Close()
		assert.IsType(t, &redis.ClusterClient{}, r.client)
	})
	t.Run("sentinel", func(t *testing.T) {
		r, err := NewRedis(RedisOptions{
			URL: "redis://:pw@127.0.0.1:1/0", Addrs: []string{"127.0.0.1:2", "127.0.0.1:3"}, MasterName: "mymaster",
		})
		require.NoError(t, err)
		defer r.Close()
		assert.IsType(t, &redis.Client{}, r.client)
		assert.Contains(t, r.client.(*redis.Client).String(), "Failover")
	})
	t.Run("external client is not closed", func(t *testing.T) {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		defer c.Close()
		r, err := NewRedis(RedisOptions{Client: c})
		require.NoError(t, err)
		require.NoError(t, r.Close())
		assert.ErrorIs(t, r.Ping(context.Background()), ErrClosed)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		assert.NotErrorIs(t, c.Ping(ctx).Err(), redis.ErrClosed)
	})
	for _, tc := range []struct {
		name string
		opts RedisOptions
		want string
	}{
		{"no address", RedisOptions{}, "needs a URL or Addrs"},
		{"bad prefix", RedisOptions{URL: "redis://127.0.0.1:1", KeyPrefix: "a{b}"}, "must not contain"},
		{"bad scheme", RedisOptions{URL: "http://user:s3cret@host:1"}, "invalid URL scheme"},
		{"bad port", RedisOptions{URL: "redis://user:s3cret@host:port/0"}, "redis URL"},
		{"bad db", RedisOptions{URL: "redis://user:s3cret@host:1/x"}, "invalid database"},
		{"unknown option", RedisOptions{URL: "redis://user:s3cret@host:1/0?bogus=1"}, "unexpected option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRedis(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret", "credentials leak into the error")
			assert.True(t, strings.HasPrefix(err.Error(), "state: "), err.Error())
		})
	}
}

// UpdateFrom writes in one compare-and-set when the base is current, and
// falls back to a full Update when the session changed since base was read.
func TestRedisUpdateFrom(t *testing.T) {
	ctx := context.Background()
	st := newTestRedis(t, RedisOptions{})
	key := Key{Tenant: "t", Session: "update-from"}

	s, err := st.UpdateFrom(ctx, key, nil, func(s *Session) error { s.SetSlot("notes", noteSlot("a")); return nil })
	require.NoError(t, err)
	require.Equal(t, int64(1), s.Version)

	base, err := st.Get(ctx, key)
	require.NoError(t, err)
	s, err = st.UpdateFrom(ctx, key, base, func(s *Session) error { s.Requests++; return nil })
	require.NoError(t, err)
	require.Equal(t, int64(2), s.Version)
	require.Equal(t, "a", noteOf(s, "notes"))

	// base is now stale: the update still lands, on the current session.
	_, err = st.Update(ctx, key, func(s *Session) error { s.SetSlot("intents", noteSlot("INT-001")); return nil })
	require.NoError(t, err)
	s, err = st.UpdateFrom(ctx, key, base, func(s *Session) error { s.Requests++; return nil })
	require.NoError(t, err)
	require.Equal(t, int64(4), s.Version)
	require.Equal(t, "INT-001", noteOf(s, "intents"), "the concurrent write is kept")
	require.Equal(t, int64(2), s.Requests)
	require.Equal(t, int64(0), base.Requests, "base is not modified")

	list, err := st.List(ctx, "t", 10)
	require.NoError(t, err)
	require.Len(t, list, 1, "the index is updated in the same round trip")
}

// A cluster store's client: cluster mode for any Addrs without MasterName
// (one seed too), one dial per attempt, the slot map refreshed at least
// every DefaultClusterStateReload.
func TestNewRedisClusterOptions(t *testing.T) {
	for _, addrs := range [][]string{{"127.0.0.1:1"}, {"127.0.0.1:1", "127.0.0.1:2"}} {
		r, err := NewRedis(RedisOptions{URL: "redis://:pw@/0", Addrs: addrs})
		require.NoError(t, err)
		cc, ok := r.client.(*redis.ClusterClient)
		require.True(t, ok, "%v: a cluster client, got %T", addrs, r.client)
		o := cc.Options()
		assert.Equal(t, addrs, o.Addrs)
		assert.Equal(t, "pw", o.Password)
		assert.Equal(t, 1, o.DialerRetries)
		assert.Equal(t, DefaultClusterStateReload, o.ClusterStateReloadInterval)
		assert.True(t, o.ContextTimeoutEnabled)
		require.NoError(t, r.Close())
	}
	r, err := NewRedis(RedisOptions{URL: "redis://127.0.0.1:1/0"})
	require.NoError(t, err)
	defer r.Close()
	assert.IsType(t, &redis.Client{}, r.client, "a URL alone is one server")
}

// staleMap: which failures of a cluster node refresh the slot map.
func TestStaleMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not found", redis.Nil, false},
		{"caller canceled", fmt.Errorf("x: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, true},
		{"eof", io.EOF, true},
		{"pool closed", redis.ErrClosed, true},
		{"clusterdown", redisError("CLUSTERDOWN The cluster is down"), true},
		{"tryagain", redisError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"masterdown", redisError("MASTERDOWN Link with MASTER is down"), true},
		{"loading", redisError("LOADING Redis is loading the dataset in memory"), true},
		{"readonly", redisError("READONLY You can't write against a read only replica."), true},
		{"script error", redisError("ERR Error running script"), false},
		{"wrong type", redisError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"noscript", redisError("NOSCRIPT No matching script"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, staleMap(tc.err))
		})
	}
}

// redisError is a server error reply as go-redis returns it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}
