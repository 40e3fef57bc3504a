package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// MaxBodyBytesCeiling is the largest limits.max_body_bytes Validate accepts
// (1 GiB). Bodies are held in memory while hooks read them.
const MaxBodyBytesCeiling = 1 << 30

// Problem is one reason a configuration is invalid.
type Problem struct {
	// Key is the dotted configuration key at fault, e.g. "upstreams.openai".
	Key string
	// Msg says what is wrong with it. It never repeats a secret.
	Msg string
}

// ValidationError lists every problem Validate found, in key order of
// Config's declaration.
type ValidationError struct {
	Problems []Problem
}

// Error renders one problem per line:
//
//	config: invalid configuration:
//	  listen: "nope" is not host:port: missing port in address
//	  upstreams.openai: scheme "ftp" is not http or https
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("config: invalid configuration:")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Key)
		b.WriteString(": ")
		b.WriteString(p.Msg)
	}
	return b.String()
}

// Validate checks c and returns nil or a *ValidationError holding every
// problem found, each naming its key. It has no side effects and does not
// modify c; it reads no files and opens no connections.
func (c *Config) Validate() error {
	var p problems

	p.hostPort("listen", c.Listen)

	p.upstreamURL("upstreams.anthropic", c.Upstreams.Anthropic)
	p.upstreamURL("upstreams.openai", c.Upstreams.OpenAI)
	p.upstreamURL("upstreams.gemini", c.Upstreams.Gemini)

	switch c.State.Backend {
	case BackendMemory, BackendRedis:
	default:
		p.add("state.backend", "%q is not one of %s, %s", c.State.Backend, BackendMemory, BackendRedis)
	}
	positive(&p, "state.ttl", c.State.TTL)
	positive(&p, "state.max_sessions", c.State.MaxSessions)
	c.State.Redis.validate(&p, c.State.Backend == BackendRedis)

	if c.Limits.MaxBodyBytes <= 0 || c.Limits.MaxBodyBytes > MaxBodyBytesCeiling {
		p.add("limits.max_body_bytes", "%d is out of range: must be > 0 and <= %d (1 GiB)", c.Limits.MaxBodyBytes, MaxBodyBytesCeiling)
	}
	positive(&p, "limits.upstream_timeout", c.Limits.UpstreamTimeout)
	positive(&p, "limits.stream_idle_timeout", c.Limits.StreamIdleTimeout)
	positive(&p, "limits.shutdown_grace", c.Limits.ShutdownGrace)
	positive(&p, "limits.max_conns_per_upstream", c.Limits.MaxConnsPerUpstream)
	positive(&p, "limits.header_timeout", c.Limits.HeaderTimeout)
	positive(&p, "limits.body_timeout", c.Limits.BodyTimeout)
	if c.Limits.MaxConnsPerIP < 0 {
		p.add("limits.max_conns_per_ip", "must be >= 0 (0 means no cap), got %d", c.Limits.MaxConnsPerIP)
	}
	if c.Limits.CutThroughBytes < 0 {
		p.add("limits.cut_through_bytes", "must be >= 0 (0 turns cut-through off), got %d", c.Limits.CutThroughBytes)
	}
	if c.Limits.ViewCacheBytes < 0 {
		p.add("limits.view_cache_bytes", "must be >= 0 (0 turns the cache off), got %d", c.Limits.ViewCacheBytes)
	}

	if c.Admin.Listen != "" {
		p.hostPort("admin.listen", c.Admin.Listen)
		if c.Admin.Listen == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
			p.add("admin.listen", "is the same address as listen; use a different address, or \"\" to serve the admin endpoints on the main listener")
		}
	}
	if c.Admin.Token == "" {
		key, addr := "admin.listen", c.Admin.Listen
		if addr == "" {
			key, addr = "listen", c.Listen // admin endpoints share the main listener
		}
		if !IsLoopbackAddr(addr) {
			p.add("admin.token", "is required: the admin endpoints (sessions API with prompts and model output, profiles) are served on %s=%q, which is not a loopback address; set admin.token (env SHEPHERD_ADMIN_TOKEN) or bind admin.listen to 127.0.0.1", key, addr)
		}
	}
	if strings.IndexFunc(c.Admin.Token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		p.add("admin.token", "must not contain whitespace or control characters (it is sent as \"Authorization: Bearer <token>\")")
	}

	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		p.add("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		p.add("log.format", "%q is not one of json, console", c.Log.Format)
	}

	switch {
	case c.Session.Header == "":
		p.add("session.header", "is required")
	case !isToken(c.Session.Header):
		p.add("session.header", "%q is not a valid HTTP header name", c.Session.Header)
	}

	for _, hp := range c.Sections.Validate() {
		p = append(p, Problem(hp))
	}
	c.Turns.validate(&p)
	c.Features.validate(&p)
	c.Pricing.validate(&p)
	c.Routing.validate(&p)
	c.Events.validate(&p)
	c.Tracing.validate(&p)

	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}

func (r *Redis) validate(p *problems, inUse bool) {
	// Syntax is checked whatever the backend, so a typo surfaces before the
	// day the backend is switched; requirements only when redis is selected.
	if r.URL != "" {
		p.redisURL("state.redis.url", r.URL)
	}
	for i, a := range r.Addrs {
		host, port, err := net.SplitHostPort(a)
		switch {
		case err != nil:
			p.add("state.redis.addrs", "item %d %q is not host:port: %v", i, a, addrErr(err))
		case host == "":
			p.add("state.redis.addrs", "item %d %q has no host", i, a)
		case !validPort(port, false):
			p.add("state.redis.addrs", "item %d %q: port %q is not a number in 1-65535", i, a, port)
		}
	}
	positive(p, "state.redis.timeout", r.Timeout)
	if strings.ContainsAny(r.KeyPrefix, "{} \t\r\n") {
		p.add("state.redis.key_prefix", "%q must not contain braces (they would break cluster hash tags) or whitespace", r.KeyPrefix)
	}
	if !inUse {
		return
	}
	if r.URL == "" && len(r.Addrs) == 0 {
		p.add("state.redis.url", "state.backend is redis: set state.redis.url or state.redis.addrs")
	}
	if r.MasterName != "" && len(r.Addrs) == 0 {
		p.add("state.redis.master_name", "sentinel mode needs the sentinel addresses in state.redis.addrs")
	}
	if r.KeyPrefix == "" {
		p.add("state.redis.key_prefix", "is required when state.backend is redis")
	}
}

// problems accumulates Problem values in the order checks run.
type problems []Problem

func (p *problems) add(key, format string, args ...any) {
	*p = append(*p, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// positive checks a count or a duration is above zero.
func positive[T ~int | ~int64](p *problems, key string, n T) {
	if n <= 0 {
		p.add(key, "must be > 0, got %v", n)
	}
}

// hostPort checks a listen address: host:port, host optional (all
// interfaces), port 0-65535 (0 picks a free port).
func (p *problems) hostPort(key, addr string) {
	if addr == "" {
		p.add(key, "is required (host:port)")
		return
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		p.add(key, "%q is not host:port: %v", addr, addrErr(err))
		return
	}
	if !validPort(port, true) {
		p.add(key, "%q: port %q is not a number in 0-65535", addr, port)
	}
}

// upstreamURL checks a provider base URL: http or https, with a host, an
// optional path prefix, and nothing else.
func (p *problems) upstreamURL(key, raw string) {
	if raw == "" {
		p.add(key, "is required (the provider's base URL)")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		p.add(key, "%q is not a URL: %v", raw, urlErr(err))
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		p.add(key, "scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		p.add(key, "%q has no host", raw)
	}
	if u.User != nil {
		// Never echo raw here: it holds the credentials.
		p.add(key, "must not carry credentials (user info); the agent's own credentials are forwarded")
	}
	if u.RawQuery != "" || u.ForceQuery {
		p.add(key, "must not have a query (%q)", "?"+u.RawQuery)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		p.add(key, "must not have a fragment")
	}
}

// redisURL checks the forms go-redis's ParseURL accepts:
// redis://[user:pass@]host[:port][/db], rediss://… and
// unix://[user:pass@]/path/to/socket. Messages never repeat the URL, which
// may hold a password.
func (p *problems) redisURL(key, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		p.add(key, "is not a URL: %v", urlErr(err))
		return
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Port() != "" && !validPort(u.Port(), false) {
			p.add(key, "port %q is not a number in 1-65535", u.Port())
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			if n, err := strconv.Atoi(db); err != nil || n < 0 {
				p.add(key, "path %q is not a database number (redis://host:port/0)", u.Path)
			}
		}
	case "unix":
		if u.Path == "" {
			p.add(key, "unix URL has no socket path (unix:///path/to/redis.sock)")
		}
	default:
		p.add(key, "scheme %q is not redis, rediss or unix", u.Scheme)
	}
}

// validPort reports whether s is a decimal port, 0 allowed only if zeroOK.
func validPort(s string, zeroOK bool) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && (zeroOK || n > 0)
}

// addrErr unwraps net.AddrError to its reason, which does not repeat the
// address.
func addrErr(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// urlErr drops the URL from a url.Error so a password is never echoed.
func urlErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// isToken reports whether s is an RFC 9110 token, the syntax of a header
// field name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// IsLoopbackAddr reports whether a listen address (host:port) only accepts
// connections from this host: "localhost" or a loopback IP. An empty host
// (":8788"), 0.0.0.0, :: and every other host or IP are not loopback; an
// address that does not parse is treated as not loopback.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
