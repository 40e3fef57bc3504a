package state

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configures NewRedis.
type RedisOptions struct {
	// URL is a redis:// or rediss:// URL ([user:pass@]host:port/db, query
	// options as go-redis ParseURL accepts). It supplies the address,
	// credentials, TLS and DB. Required unless Addrs or Client is set.
	URL string
	// Addrs are seed addresses (host:port). When set they replace URL's host:
	// several addresses select cluster mode, and with MasterName they are the
	// sentinels. URL then still supplies credentials, TLS and DB.
	Addrs []string
	// MasterName selects sentinel (failover) mode.
	MasterName string
	// Timeout bounds every round trip to Redis (one command or pipeline);
	// default 200ms. An Update makes two or three round trips per attempt, a
	// List two or more.
	Timeout time.Duration
	// KeyPrefix starts every key; default "shepherd". It must not contain
	// '{' or '}' (they delimit the cluster hash tag).
	KeyPrefix string
	// TTL is how long a session lives after its last Update; default 24h.
	TTL time.Duration
	// MaxAttempts bounds how often Update re-reads and retries after losing
	// a compare-and-set race before it returns ErrConflict; default 64.
	MaxAttempts int
	// EventsPerSession and EventsGlobal bound the event streams (EventLog):
	// the newest records kept per session and for all sessions. Defaults
	// DefaultEventsPerSession and DefaultEventsGlobal; <= 0 means the
	// default.
	EventsPerSession int
	EventsGlobal     int
	// OnError, when set, is called with the operation ("get", "update",
	// "delete", "list", "ping", "index", "events", "approvals" or "journal") for every failure of the store
	// itself: not for ErrNotFound, ErrInvalidKey, ErrClosed, errors returned
	// by an Update's fn, or a caller's context ending. The proxy counts these
	// in a metric. It must be safe for concurrent use and must not block.
	OnError func(op string, err error)
	// PinnedSessions keeps the sessions this process wrote in memory and
	// answers Get from them without a round trip, so that a turn makes one
	// round trip (its save) instead of two. It is sound when every request
	// of a session reaches this process: one replica, a sidecar, or a load
	// balancer that pins sessions to replicas. Saves stay compare-and-sets,
	// so a session another process wrote meanwhile loses no update, but the
	// request was built from the older copy; PinnedStats counts those as
	// Stale. With counters prefetched (PrefetchCounters) Get reads Redis as
	// without pinning. See pinnedSessions.
	PinnedSessions bool
	// PinnedMax bounds the pinned sessions kept (least recently used out
	// first); default DefaultPinnedMax.
	PinnedMax int
	// Client, when set, is used instead of dialing from URL/Addrs (tests, or
	// a client shared with other code). Close does not close it. Set
	// ContextTimeoutEnabled on it so a deadline also cuts socket reads.
	Client redis.UniversalClient
}

// Redis defaults.
const (
	DefaultRedisTimeout     = 200 * time.Millisecond
	DefaultRedisKeyPrefix   = "shepherd"
	DefaultRedisMaxAttempts = 64
	DefaultPinnedMax        = 10000
)

// Redis is a Store kept in Redis (single node, sentinel or cluster), for
// replicas that share sessions. It is safe for concurrent use.
//
// Layout, for prefix P, tenant T and session S:
//
//	P:{T:S}:s   hash: v = Version, d = Session JSON, m = Summary JSON,
//	            w = token of the last write; expires TTL after each Update
//	P:idx:T     sorted set of S scored by UpdatedAt (unix ms)
//	P:idx       sorted set of T+"\x00"+S scored by UpdatedAt (unix ms)
//	P:{T:S}:e   stream: the session's event log (EventLog, redis_events.go)
//	P:events    stream: every session's events
//	P:{T:S}:a   hash: the session's approvals (Approvals, redis_approvals.go)
//	P:approvals sorted set of T+"\x00"+S+"\x00"+id scored by HeldAt (unix ms)
//	P:{T:S}:j   hash: the session's edit journal (EditJournal, redis_journal.go)
//	P:{T:S}:jo  sorted set: the journal's live seqs, in order
//	P:{T:S}:b   hash: the session's budget counters (Counters, redis_counters.go)
//
// A session is one key, so every operation on it is single-slot in cluster
// mode (the {T:S} hash tag keeps it so should fields ever move to sibling
// keys). Update is optimistic: it reads the hash, runs fn, and writes with a
// Lua compare-and-set on v, retrying with jittered backoff when another
// writer got in first. The two indexes live in other slots; they are written
// after the session and are best-effort: List skips and prunes members whose
// session has expired or been deleted, Update trims members older than the
// TTL, and ZADD GT keeps a score from moving backwards when two writes race.
// The global index is a single key, and so a single slot, shared by every
// replica.
type Redis struct {
	client     redis.UniversalClient
	ownsClient bool
	timeout    time.Duration
	prefix     string
	ttl        time.Duration
	attempts   int
	onError    func(op string, err error)
	closed     atomic.Bool
	// prefetch: Get reads the session's counters too (PrefetchCounters).
	prefetch atomic.Bool
	// pinned: the sessions this process wrote (RedisOptions.PinnedSessions),
	// nil when off.
	pinned *pinnedSessions

	eventsPerSession int
	eventsGlobal     int
}

var _ Store = (*Redis)(nil)

// NewRedis returns a Redis store. It does not contact the server; use Ping
// to check it is reachable. Errors never contain the URL's credentials.
func NewRedis(opts RedisOptions) (*Redis, error) {
	r := &Redis{
		client:   opts.Client,
		timeout:  opts.Timeout,
		prefix:   opts.KeyPrefix,
		ttl:      opts.TTL,
		attempts: opts.MaxAttempts,
		onError:  opts.OnError,

		eventsPerSession: opts.EventsPerSession,
		eventsGlobal:     opts.EventsGlobal,
	}
	if r.eventsPerSession <= 0 {
		r.eventsPerSession = DefaultEventsPerSession
	}
	if r.eventsGlobal <= 0 {
		r.eventsGlobal = DefaultEventsGlobal
	}
	if r.timeout <= 0 {
		r.timeout = DefaultRedisTimeout
	}
	if r.prefix == "" {
		r.prefix = DefaultRedisKeyPrefix
	}
	if strings.ContainsAny(r.prefix, "{}") {
		return nil, fmt.Errorf("state: redis key prefix %q must not contain '{' or '}'", r.prefix)
	}
	if r.ttl <= 0 {
		r.ttl = DefaultTTL
	}
	if r.attempts <= 0 {
		r.attempts = DefaultRedisMaxAttempts
	}
	if opts.PinnedSessions {
		m := opts.PinnedMax
		if m <= 0 {
			m = DefaultPinnedMax
		}
		r.pinned = newPinnedSessions(m, r.ttl)
	}
	if r.client == nil {
		uo, err := universalOptions(opts)
		if err != nil {
			return nil, err
		}
		r.client = newUniversalClient(uo)
		r.ownsClient = true
	}
	return r, nil
}

// universalOptions builds go-redis options from URL, Addrs and MasterName.
func universalOptions(opts RedisOptions) (*redis.UniversalOptions, error) {
	uo := &redis.UniversalOptions{
		Addrs:                 opts.Addrs,
		MasterName:            opts.MasterName,
		ContextTimeoutEnabled: true,
	}
	if opts.URL != "" {
		o, err := redis.ParseURL(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("state: redis URL %s: %w", redactURL(opts.URL), scrubError(err, opts.URL))
		}
		if len(uo.Addrs) == 0 {
			uo.Addrs = []string{o.Addr}
		}
		uo.DB = o.DB
		uo.Username, uo.Password = o.Username, o.Password
		uo.TLSConfig = o.TLSConfig
		uo.ClientName = o.ClientName
		uo.Protocol = o.Protocol
		uo.MaxRetries, uo.MinRetryBackoff, uo.MaxRetryBackoff = o.MaxRetries, o.MinRetryBackoff, o.MaxRetryBackoff
		uo.DialTimeout, uo.ReadTimeout, uo.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
		uo.PoolFIFO, uo.PoolSize, uo.PoolTimeout = o.PoolFIFO, o.PoolSize, o.PoolTimeout
		uo.MinIdleConns, uo.MaxIdleConns, uo.MaxActiveConns = o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns
		uo.ConnMaxIdleTime, uo.ConnMaxLifetime = o.ConnMaxIdleTime, o.ConnMaxLifetime
	}
	if len(uo.Addrs) == 0 {
		return nil, errors.New("state: redis needs a URL or Addrs")
	}
	// Addrs without MasterName are cluster seeds, even a single one (a
	// cluster's service name); a URL alone names one server.
	uo.IsClusterMode = len(opts.Addrs) > 0 && opts.MasterName == ""
	return uo, nil
}

// newUniversalClient is redis.NewUniversalClient, except that a cluster
// client refreshes its slot map as soon as a node fails (watchCluster) and
// at least every DefaultClusterStateReload.
func newUniversalClient(uo *redis.UniversalOptions) redis.UniversalClient {
	if uo.MasterName != "" || !uo.IsClusterMode {
		return redis.NewUniversalClient(uo)
	}
	co := uo.Cluster()
	co.ClusterStateReloadInterval = DefaultClusterStateReload
	// One dial per attempt: go-redis redials a refused address 5 times,
	// 100 ms apart, which spends a whole round trip's Timeout on a dead
	// master. In a cluster a refused dial means the slot map is stale; the
	// command's own retries (MaxRedirects) go to the refreshed map instead.
	co.DialerRetries = 1
	cc := redis.NewClusterClient(co)
	watchCluster(cc)
	return cc
}

// redactURL returns raw with any password and query replaced, or a
// placeholder when raw does not parse.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "..."
	}
	return u.Redacted()
}

// scrubError returns err with the raw URL, which may hold credentials,
// removed from its text (url.Parse errors quote their input). The result
// keeps err's message only, not its chain.
func scrubError(err error, raw string) error {
	msg := strings.ReplaceAll(err.Error(), raw, "(url)")
	if u, perr := url.Parse(raw); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return errors.New(msg)
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key Key) (*Session, error) {
	if err := r.check(ctx, "get"); err != nil {
		return nil, err
	}
	if !key.Valid() {
		return nil, fmt.Errorf("%w (%w)", ErrNotFound, ErrInvalidKey)
	}
	prefetch := r.prefetch.Load()
	if r.pinned != nil && !prefetch {
		if s := r.pinned.get(key, time.Now()); s != nil {
			return s, nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var raw []byte
	var err error
	var counters *redis.MapStringStringCmd
	if prefetch {
		// One round trip: the session and its counters (same slot).
		pipe := r.client.Pipeline()
		data := pipe.HGet(cctx, r.sessionKey(key), fieldData)
		counters = pipe.HGetAll(cctx, r.countersKey(key))
		_, _ = pipe.Exec(cctx) // errors are read per command
		raw, err = data.Bytes()
	} else {
		raw, err = r.client.HGet(cctx, r.sessionKey(key), fieldData).Bytes()
	}
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, r.fail(ctx, "get", err)
	}
	s := new(Session)
	if err := decodeRecord(raw, s); err != nil {
		if errors.Is(err, ErrRecordVersion) {
			return nil, fmt.Errorf("state: redis get: %w", err)
		}
		return nil, r.fail(ctx, "get", fmt.Errorf("decode session: %w", err))
	}
	if counters != nil {
		fields, err := counters.Result()
		if err == nil {
			s.counters, err = decodeCounters(fields)
		}
		if err != nil {
			// The session itself was read: its counters are left to the
			// caller's own read (Session.Counters reports none).
			r.fail(ctx, "counters", err)
			s.counters = nil
		}
	}
	return s, nil
}

// Delete implements Store: it removes the session, its event stream, its
// approvals and its edit journal (one DEL: the keys share the session's
// slot). Deleting a
// missing session is not an error.
func (r *Redis) Delete(ctx context.Context, key Key) error {
	if err := r.check(ctx, "delete"); err != nil {
		return err
	}
	if !key.Valid() {
		return nil
	}
	if r.pinned != nil {
		r.pinned.drop(key) // even if the DEL fails: its outcome is unknown
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.client.Del(cctx, r.sessionKey(key), r.eventsKey(key), r.approvalsKey(key), r.journalKey(key), r.journalOrderKey(key), r.countersKey(key)).Err(); err != nil {
		return r.fail(ctx, "delete", err)
	}
	r.unindex(ctx, []Key{key})
	return nil
}

// Ping implements Store with a PING; on a cluster, with a fresh slot map
// and CLUSTER INFO of every master (pingCluster): it answers whether every
// session's slot can be served now.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.check(ctx, "ping"); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var err error
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		err = pingCluster(cctx, cc)
	} else {
		err = r.client.Ping(cctx).Err()
	}
	if err != nil {
		return r.fail(ctx, "ping", err)
	}
	return nil
}

// Close closes the client unless it was passed in RedisOptions.Client.
// Later calls of any method return ErrClosed; Close itself is idempotent.
func (r *Redis) Close() error {
	if r.closed.Swap(true) || !r.ownsClient {
		return nil
	}
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("state: redis close: %w", err)
	}
	return nil
}

// Hash fields of a session key.
const (
	fieldVersion = "v"
	fieldData    = "d"
	fieldSummary = "m"
	fieldToken   = "w"
)

// sessionKey is P:{T:S}:s; the braces make T:S the cluster hash tag.
func (r *Redis) sessionKey(k Key) string {
	return r.prefix + ":{" + k.Tenant + ":" + k.Session + "}:s"
}

func (r *Redis) tenantIndex(tenant string) string { return r.prefix + ":idx:" + tenant }

func (r *Redis) globalIndex() string { return r.prefix + ":idx" }

// globalMember names a session in the global index; tenants hold no NUL.
func globalMember(k Key) string { return k.Tenant + "\x00" + k.Session }

func parseGlobalMember(m string) Key {
	t, s, _ := strings.Cut(m, "\x00")
	return Key{Tenant: t, Session: s}
}

// check fails fast on a closed store or a done context.
func (r *Redis) check(ctx context.Context, op string) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: redis %s: %w", op, err)
	}
	return nil
}

// fail wraps err for op and reports it to OnError unless the caller's ctx
// ended (then the failure is the caller's, not the store's).
func (r *Redis) fail(ctx context.Context, op string, err error) error {
	if errors.Is(err, redis.ErrClosed) && r.closed.Load() {
		return ErrClosed
	}
	err = fmt.Errorf("state: redis %s: %w", op, err)
	if ctx.Err() == nil && r.onError != nil {
		r.onError(op, err)
	}
	return err
}
