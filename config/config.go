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

import "time"

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
	// Topics configures topic chapters (docs/features.md).
	Topics Topics `mapstructure:"topics"`
	// Intents configures intent governance (docs/features.md).
	Intents Intents `mapstructure:"intents"`
	// Recovery configures truncation recovery (docs/features.md).
	Recovery Recovery `mapstructure:"recovery"`
	// Turns bounds the upstream rounds the turn engine makes within one
	// turn, per cause.
	Turns Turns `mapstructure:"turns"`
	// Features holds settings shared by the features.
	Features Features `mapstructure:"features"`

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

// Features holds settings shared by topics, intents and recovery.
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
	// evicted first; default 10000.
	MaxSessions int `mapstructure:"max_sessions"`
	// Redis configures the redis backend.
	Redis Redis `mapstructure:"redis"`
}

// Redis configures the Redis store. URL forms: redis://[user:pass@]host:port/db,
// rediss:// for TLS; several comma-separated addresses in Addrs select cluster
// mode, and MasterName selects sentinel mode (go-redis universal client).
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
	// MaxConnsPerUpstream: key limits.max_conns_per_upstream; most open
	// connections to one provider; default 1024.
	MaxConnsPerUpstream int `mapstructure:"max_conns_per_upstream"`
	// ViewCacheBytes: key limits.view_cache_bytes; memory for the parsed
	// views of conversation messages, shared by all sessions (agents resend
	// their history, so a resent message is not parsed again); 0 turns the
	// cache off. Default 67108864 (64 MiB).
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

// Topics configures the topic-chapters feature and the turn engine's bounds.
type Topics struct {
	// Enabled: key topics.enabled; default true. Off, requests and replies
	// pass through untouched.
	Enabled bool `mapstructure:"enabled"`
	// ToolName: key topics.tool_name; the tool offered to the model; default
	// create_new_topic.
	ToolName string `mapstructure:"tool_name"`
	// Placement: key topics.placement; where the per-turn "[Active Topic: …]"
	// reminder goes: last_user (default; the end of the newest user turn,
	// after every cache breakpoint) or system (for models without prompt
	// caching: it changes the cache prefix whenever the topic changes).
	Placement string `mapstructure:"placement"`
	// MaxFollowups: key topics.max_followups; deprecated alias of
	// turns.max_followups (Load maps it there with a warning, see
	// Deprecations); -1, the default, means unset.
	MaxFollowups int `mapstructure:"max_followups"`
	// Guidance: key topics.guidance; the system-prompt guidance; "" uses the
	// built-in text.
	Guidance string `mapstructure:"guidance"`
	// Reminder: key topics.reminder; the per-turn reminder, {title} replaced
	// by the active topic; "" uses the built-in text.
	Reminder string `mapstructure:"reminder"`
	// NoTopicReminder: key topics.no_topic_reminder; the reminder before the
	// first chapter; "" uses the built-in text.
	NoTopicReminder string `mapstructure:"no_topic_reminder"`
}

// Switch is a three-way setting: auto, true or false. YAML booleans and the
// strings "true"/"false"/"auto" all decode into it.
type Switch string

// Switch values.
const (
	SwitchAuto Switch = "auto"
	SwitchOn   Switch = "true"
	SwitchOff  Switch = "false"
)

// FailMode says what governance does when it cannot decide.
type FailMode string

// Fail modes for intents.on_error.
const (
	// FailClosed refuses every tool call except the always-allowed ones.
	FailClosed FailMode = "closed"
	// FailOpen lets every tool call through (and audits it as such).
	FailOpen FailMode = "open"
)

// Intents configures intent governance (docs/features.md): the
// select_active_intent tool, the gatekeeper, and scope and constraint
// enforcement from a watched policy file.
type Intents struct {
	// Enabled: key intents.enabled; auto (default: on when the policy file
	// exists at start-up), true or false. With true and no loadable file,
	// governance follows OnError.
	Enabled Switch `mapstructure:"enabled"`
	// File: key intents.file; the policy file, relative to WorkspaceRoot
	// unless absolute; default .orchestration/active_intents.yaml. It is
	// watched: changes apply without restart, a broken file keeps the last
	// good policy.
	File string `mapstructure:"file"`
	// WorkspaceRoot: key intents.workspace_root; the directory the agent's
	// file paths are relative to and must stay inside; default "" (the
	// proxy's working directory). When set it must be an existing directory.
	WorkspaceRoot string `mapstructure:"workspace_root"`
	// AlwaysAllowed: key intents.always_allowed; tools that bypass the
	// gatekeeper (may run with no intent selected); by default the common
	// agents' read-only tools. Constraints and scope still apply to them once
	// an intent is active.
	AlwaysAllowed []string `mapstructure:"always_allowed"`
	// PathArgs: key intents.path_args; which arguments of which tools are
	// file paths, as "Tool:argpath" entries (argpath a gjson path to a
	// string or array of strings) or "Tool:patch(argpath)" for an
	// apply_patch-format patch. Default: the common agents' file-writing
	// tools. Setting it replaces the whole default list.
	PathArgs []string `mapstructure:"path_args"`
	// ShellArgs: key intents.shell_args; which tools run shell commands, as
	// "Tool:argpath" (a script, or an array of scripts) or
	// "Tool:argv(argpath)" (an argument vector) entries, each optionally
	// followed by "@dirpath" naming the working-directory argument. The
	// files such a command writes (redirections, tee, sed -i, cp, mv, rm,
	// touch, mkdir, ln, truncate, dd, bash -c scripts) are checked against
	// the active intent's scope. Default: the common agents' shell tools.
	// Setting it replaces the whole default list.
	ShellArgs []string `mapstructure:"shell_args"`
	// UnparsedCommands: key intents.unparsed_commands; refuse (default) or
	// allow: what happens, while an intent is active, to a shell command
	// whose written files cannot all be known (dynamic targets like $VAR,
	// command substitution in a target, eval, xargs, a syntax error).
	UnparsedCommands string `mapstructure:"unparsed_commands"`
	// InferPathArgs: key intents.infer_path_args; default true. A tool
	// listed in neither always_allowed, path_args nor shell_args is still
	// scope-checked on the arguments that look like file paths (path,
	// file_path, filepath, filePath, notebook_path, paths, target_file,
	// files[].path, an apply_patch patch in input or patch).
	InferPathArgs bool `mapstructure:"infer_path_args"`
	// OnError: key intents.on_error; closed (default) or open: what happens
	// to tool calls when no valid policy could ever be loaded or the state
	// store is down. closed refuses every call except always-allowed ones,
	// with a reason saying the policy is unavailable; open lets them through.
	OnError FailMode `mapstructure:"on_error"`
	// Routes override File and WorkspaceRoot per wire API.
	Routes IntentRoutes `mapstructure:"routes"`
}

// IntentRoutes holds per-API overrides of the policy file and workspace
// root; an empty field inherits intents.file / intents.workspace_root.
type IntentRoutes struct {
	// Anthropic: keys intents.routes.anthropic.{file,workspace_root}
	// (Messages API).
	Anthropic IntentRoute `mapstructure:"anthropic"`
	// OpenAIChat: keys intents.routes.openai_chat.{file,workspace_root}.
	OpenAIChat IntentRoute `mapstructure:"openai_chat"`
	// OpenAIResponses: keys intents.routes.openai_responses.{file,workspace_root}.
	OpenAIResponses IntentRoute `mapstructure:"openai_responses"`
	// Gemini: keys intents.routes.gemini.{file,workspace_root}.
	Gemini IntentRoute `mapstructure:"gemini"`
}

// IntentRoute overrides where one API's policy comes from.
type IntentRoute struct {
	File          string `mapstructure:"file"`
	WorkspaceRoot string `mapstructure:"workspace_root"`
}

// Recovery configures truncation recovery and the output-limit floor
// (docs/features.md).
type Recovery struct {
	// Enabled: key recovery.enabled; default true. Off, replies cut by the
	// output limit reach the agent as they are and limits are not raised.
	Enabled bool `mapstructure:"enabled"`
	// MaxAttempts: key recovery.max_attempts; continuations per turn;
	// default 2, at most 8.
	MaxAttempts int `mapstructure:"max_attempts"`
	// MinOutputTokens: key recovery.min_output_tokens; a request's output
	// limit below this is raised to it (never above the model's maximum);
	// 0 disables the floor. Default 1200.
	MinOutputTokens int64 `mapstructure:"min_output_tokens"`
	// Strategy: key recovery.strategy; "model-glob=prefill|instruction"
	// rules, first match wins, * matches anything; a model no rule matches
	// uses instruction. prefill is used only where the request has no
	// extended thinking. Default: claude-3*=prefill, *=instruction.
	Strategy []string `mapstructure:"strategy"`
	// MaxOutputTokens: key recovery.max_output_tokens; "model-glob=N" rules
	// giving each model's largest output limit, the cap of the floor and of
	// the doubled limit after a cut tool call. Default: a table of current
	// Anthropic, OpenAI and Gemini models.
	MaxOutputTokens []string `mapstructure:"max_output_tokens"`
	// Instruction: key recovery.instruction; the continue instruction of
	// the instruction strategy; "" uses the built-in text.
	Instruction string `mapstructure:"instruction"`
}

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
