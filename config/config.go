// Package config defines shepherd's typed configuration, its defaults, loading
// from a YAML file, SHEPHERD_* environment variables and flags, and validation.
// A Config is built and validated once at start-up and never mutated after.
//
// Every key (e.g. state.redis.url) comes from the mapstructure tags below and
// can be set, highest precedence first, by a flag override, by its
// environment variable (EnvName: SHEPHERD_STATE_REDIS_URL), by the YAML file,
// or falls back to Defaults. Unknown keys in the file are rejected. Log a
// Config through String or Redacted, which mask secrets.
package config

import (
	"time"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/registry"
)

// Config is the whole configuration. Each field documents its key, default
// and meaning; config.example.yaml documents the same keys for operators.
type Config struct {
	// Listen is the proxy's listen address, host:port; an empty host listens
	// on all interfaces, port 0 picks a free port. Key listen; default
	// 127.0.0.1:8787.
	Listen string `mapstructure:"listen"`
	// Upstreams are the provider base URLs.
	Upstreams Upstreams `mapstructure:"upstreams"`
	// State selects and configures the session store.
	State State `mapstructure:"state"`
	// Limits bound what the proxy accepts and how long it waits.
	Limits Limits `mapstructure:"limits"`
	// Admin configures the admin listener (/healthz, /readyz, /metrics,
	// sessions API).
	Admin Admin `mapstructure:"admin"`
	// Log configures logging.
	Log Log `mapstructure:"log"`
	// Session configures how sessions are identified.
	Session Session `mapstructure:"session"`
	// Sections holds the features' sections (intents, topics, recovery:
	// docs/features.md), each typed by its feature's Config. Its fields are
	// promoted: c.Topics.Enabled is key topics.enabled.
	//
	// The types live with the features (hooks/<feature>) and are listed
	// once, in hooks/registry; embedding that list here keeps the
	// configuration one typed struct, loaded, defaulted and validated once
	// at start-up with every other key (Load lists every problem of every
	// section together), while package config names no feature. The
	// alternative, keeping raw sections for the registry to decode later,
	// would lose the per-key environment variables, the unknown-key check
	// and the single list of problems.
	registry.Sections `mapstructure:",squash"`
	// Turns bounds the upstream rounds the turn engine makes within one
	// turn, per cause.
	Turns Turns `mapstructure:"turns"`
	// Features holds settings shared by the features.
	Features Features `mapstructure:"features"`
	// Pricing overrides or adds model prices for the usage cost.
	Pricing Pricing `mapstructure:"pricing"`
	// Events configures the live event feed (events.go).
	Events Events `mapstructure:"events"`
	// Routing picks a model and an upstream per request by rule
	// (routing.go).
	Routing Routing `mapstructure:"routing"`
	// Tracing configures OpenTelemetry trace export (tracing.go).
	Tracing Tracing `mapstructure:"tracing"`

	// deprecations are the warnings Load noted for deprecated keys.
	deprecations []string
}

// Deprecations returns a warning for each deprecated key the configuration
// set (Load fills them; the caller logs them once at start-up).
func (c *Config) Deprecations() []string { return c.deprecations }

// Values of features.side_requests.
const (
	SideRequestsPass   = "pass"
	SideRequestsInject = "inject"
)

// Features holds settings shared by the features.
type Features struct {
	// SideRequests: key features.side_requests; pass (default) or inject.
	// A side request is one that is not an agent turn: it declares no
	// tools, forbids tool calls (tool_choice none) or constrains its output
	// to JSON (routing classifiers, title and summary calls). With pass
	// topics and intents add no tool, rule or reminder to it, it is not
	// counted as a turn of the session, and it is counted in
	// shepherd_side_requests_total; with inject the features treat it like
	// any request.
	SideRequests string `mapstructure:"side_requests"`
}

// Upstreams holds one base URL per provider. The upstream host is always taken
// from here, never from the request. A base URL may carry a path prefix
// (e.g. http://mock:9000/anthropic), which is prepended to the request path.
// Each must be http or https with a host, and carry no query, fragment or
// user info (the agent's own credentials are forwarded).
type Upstreams struct {
	// Anthropic: key upstreams.anthropic; default https://api.anthropic.com.
	Anthropic string `mapstructure:"anthropic"`
	// OpenAI: key upstreams.openai; default https://api.openai.com.
	OpenAI string `mapstructure:"openai"`
	// Gemini: key upstreams.gemini; default
	// https://generativelanguage.googleapis.com.
	Gemini string `mapstructure:"gemini"`
}

// Backend names a state store implementation.
type Backend string

// State backends.
const (
	BackendMemory Backend = "memory"
	BackendRedis  Backend = "redis"
)

// State configures session storage.
type State struct {
	// Backend: key state.backend; memory (default) or redis.
	Backend Backend `mapstructure:"backend"`
	// TTL: key state.ttl; how long a session lives after its last update;
	// default 24h.
	TTL time.Duration `mapstructure:"ttl"`
	// MaxSessions: key state.max_sessions; memory backend bound, oldest
	// evicted first; with redis and state.redis.pinned_sessions, the bound
	// of the sessions kept in memory; default 10000.
	MaxSessions int `mapstructure:"max_sessions"`
	// Redis configures the redis backend.
	Redis Redis `mapstructure:"redis"`
}

// Redis configures the Redis store. URL forms: redis://[user:pass@]host:port/db,
// rediss:// for TLS; addresses in Addrs (one or more) select cluster mode,
// and MasterName selects sentinel mode (docs/operations-redis.md).
type Redis struct {
	// URL: key state.redis.url; e.g. redis://127.0.0.1:6379/0; schemes
	// redis, rediss and unix (unix:///path/to/redis.sock). Default "" (none).
	// Its password is masked by String and Redacted. Its syntax is checked
	// even when the backend is memory.
	URL string `mapstructure:"url"`
	// Addrs: key state.redis.addrs; cluster or sentinel seed addresses
	// (host:port), used instead of URL's host when set. Default none; from
	// the environment, comma-separated.
	Addrs []string `mapstructure:"addrs"`
	// MasterName: key state.redis.master_name; sentinel master name; default
	// "" (not sentinel). Requires Addrs (the sentinels).
	MasterName string `mapstructure:"master_name"`
	// Timeout: key state.redis.timeout; per-call timeout; default 200ms.
	Timeout time.Duration `mapstructure:"timeout"`
	// KeyPrefix: key state.redis.key_prefix; namespaces shepherd's keys;
	// default "shepherd"; no braces (they would break cluster hash tags).
	KeyPrefix string `mapstructure:"key_prefix"`
	// PinnedSessions: key state.redis.pinned_sessions; default false. true:
	// this process keeps the sessions it saved (up to state.max_sessions)
	// and rewrites a session's next request from that copy instead of
	// reading Redis, so a turn makes one round trip (the save) instead of
	// two. Only for deployments where every request of a session reaches
	// the same process: one replica or a sidecar using Redis to outlive
	// restarts, or a load balancer that pins sessions. Saves still
	// compare-and-set, so no update is lost if that does not hold, but the
	// request was rewritten from an older session;
	// shepherd_store_pinned_total{result="stale"} counts those
	// (docs/state-events.md, "Round trips per request").
	PinnedSessions bool `mapstructure:"pinned_sessions"`
}

// Limits bounds requests.
type Limits struct {
	// MaxBodyBytes: key limits.max_body_bytes; largest request body accepted;
	// default 33554432 (32 MiB, the Anthropic API's own limit); at most
	// MaxBodyBytesCeiling (1 GiB).
	MaxBodyBytes int `mapstructure:"max_body_bytes"`
	// UpstreamTimeout: key limits.upstream_timeout; the longest the upstream
	// may stay silent: before its response headers (a non-streaming reply's
	// headers come when generation ends) or between two reads of a body. It
	// measures silence, not the whole exchange, so long streams are not cut.
	// A timeout before the headers gives 504. Default 10m.
	UpstreamTimeout time.Duration `mapstructure:"upstream_timeout"`
	// StreamIdleTimeout: key limits.stream_idle_timeout; longest silence
	// allowed between two stream reads from upstream before the stream is cut;
	// default 5m.
	StreamIdleTimeout time.Duration `mapstructure:"stream_idle_timeout"`
	// ShutdownGrace: key limits.shutdown_grace; how long open streams may run
	// after a shutdown signal; default 30s.
	ShutdownGrace time.Duration `mapstructure:"shutdown_grace"`
	// DetachStreams: key limits.detach_streams; serve a streamed reply to an
	// HTTP/1.1 client on a goroutine of its own over the hijacked
	// connection, so that an open stream keeps none of the HTTP server's
	// per-connection state (about half the memory of an idle stream); the
	// connection serves the client's next request afterwards. false keeps
	// every stream on the server's connection goroutine. Default true.
	DetachStreams bool `mapstructure:"detach_streams"`
	// MaxConnsPerUpstream: key limits.max_conns_per_upstream; most open
	// connections to one provider; default 1024.
	MaxConnsPerUpstream int `mapstructure:"max_conns_per_upstream"`
	// ViewCacheBytes: key limits.view_cache_bytes; memory for the parsed
	// views of conversation messages, shared by all sessions (agents resend
	// their history, so a resent message is not parsed again); 0 turns the
	// cache off. Default 67108864 (64 MiB). Half of it again bounds each
	// of the two memos of recent bodies (rewrite's index memo, the turn
	// engine's history memo), and a sixteenth the turn engine's memo of
	// the user texts it put into earlier turns.
	ViewCacheBytes int64 `mapstructure:"view_cache_bytes"`
	// HeaderTimeout: key limits.header_timeout; the longest a client may
	// take to send a request's headers, counted from its first byte (on a
	// new connection, from the accept). A slow client (slowloris) is cut
	// after it. Default 15s.
	HeaderTimeout time.Duration `mapstructure:"header_timeout"`
	// BodyTimeout: key limits.body_timeout; the longest a client may take to
	// send a request's body once its headers are in. Default 5m.
	BodyTimeout time.Duration `mapstructure:"body_timeout"`
	// MaxConnsPerIP: key limits.max_conns_per_ip; most connections open at
	// once from one client IP address; the connection beyond it is answered
	// 429 and closed. 0 means no cap. Default 0: the default listener is
	// loopback, where every agent shares one address.
	MaxConnsPerIP int `mapstructure:"max_conns_per_ip"`
	// CutThroughBytes: key limits.cut_through_bytes; a request body of at
	// least this many bytes (by its Content-Length) that shepherd forwards
	// unchanged (a pass-through route's; a model request's when no feature
	// runs on its API, no routing rule, no Content-Encoding, tracing off)
	// goes upstream while it still arrives; its last byte
	// is held until the whole body passed the same checks as any other
	// (a refused body never reaches the upstream whole). 0 reads every body
	// whole first; so does an upstream_timeout shorter than body_timeout
	// (the upload would run against the upstream's write deadline).
	// Default 65536.
	CutThroughBytes int `mapstructure:"cut_through_bytes"`
}

// Admin configures the admin endpoints.
type Admin struct {
	// Listen: key admin.listen; default 127.0.0.1:8788; "" serves the admin
	// endpoints on the main listener under /shepherd/ and /healthz etc.
	Listen string `mapstructure:"listen"`
	// Token: key admin.token; when set, the sessions API and /debug/pprof/
	// (served on a dedicated admin listener only) require
	// "Authorization: Bearer <token>". /healthz, /readyz and /metrics stay open.
	// Default "" (sessions API open). A secret: String and Redacted print ***.
	Token string `mapstructure:"token"`
}

// Log configures zap.
type Log struct {
	// Level: key log.level; debug, info (default), warn, error.
	Level string `mapstructure:"level"`
	// Format: key log.format; json (default) or console.
	Format string `mapstructure:"format"`
}

// Session configures session identification.
type Session struct {
	// Header: key session.header; the first header consulted for a session
	// id; default X-Session-Id; must be a valid header name.
	Header string `mapstructure:"header"`
}

// Switch is a three-way setting: auto, true or false (hooks.Switch). YAML
// booleans and the strings "true"/"false"/"auto" all decode into it.
type Switch = hooks.Switch

// Switch values.
const (
	SwitchAuto = hooks.SwitchAuto
	SwitchOn   = hooks.SwitchOn
	SwitchOff  = hooks.SwitchOff
)

// Turns bounds, per cause, the requests the turn engine sends upstream
// within one turn after the agent's own request. Continuations of a reply
// cut by the output limit are bounded by recovery.max_attempts.
type Turns struct {
	// MaxFollowups: key turns.max_followups; the most follow-up requests
	// after shepherd answered every call of a reply itself (claimed calls,
	// such as create_new_topic); default 4, at most 16. The deprecated key
	// topics.max_followups sets it too.
	MaxFollowups int `mapstructure:"max_followups"`
	// MaxRefusalRounds: key turns.max_refusal_rounds; the most follow-up
	// requests after shepherd refused calls of a reply (and answered the
	// rest), so the model can try again within the turn; default 4, at
	// most 16. Past the bound the refusals reach the model with the next
	// request.
	MaxRefusalRounds int `mapstructure:"max_refusal_rounds"`
}
