package config

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// Mask replaces secrets in Redacted and String.
const Mask = "***"

// Redacted returns a copy of c safe to log: admin.token becomes Mask when set
// and any password in state.redis.url (user info or a query parameter whose
// name contains "pass") becomes Mask, e.g. redis://user:***@host:6379/0. An
// unset secret stays "" so the log still shows whether it was configured.
// An unparseable redis URL is replaced by Mask as a whole. Every
// tracing.headers value becomes Mask (authorization=***).
func (c Config) Redacted() Config {
	r := c
	r.State.Redis.Addrs = slices.Clone(c.State.Redis.Addrs)
	if r.Admin.Token != "" {
		r.Admin.Token = Mask
	}
	r.State.Redis.URL = redactURL(r.State.Redis.URL)
	r.Tracing.Headers = redactedHeaders(c.Tracing.Headers)
	return r
}

func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Mask
	}
	if u.User != nil {
		if _, hasPass := u.User.Password(); hasPass {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for name := range q {
			if strings.Contains(strings.ToLower(name), "pass") {
				q[name] = []string{Mask}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	// url.URL.String may escape the mask as %2A%2A%2A (it does in the query);
	// keep it readable.
	return strings.ReplaceAll(u.String(), "%2A%2A%2A", Mask)
}

// String renders the redacted configuration as space-separated key=value
// pairs in declaration order, e.g.
//
//	listen=127.0.0.1:8787 upstreams.anthropic=https://api.anthropic.com … admin.token=*** …
//
// Empty values print as "" and lists comma-separated in brackets. Because it
// always redacts, logging a Config with %v or zap.Stringer is safe (%#v is
// not: it bypasses String).
func (c Config) String() string {
	rv := reflect.ValueOf(c.Redacted())
	var b strings.Builder
	for i, f := range fields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.key)
		b.WriteByte('=')
		fv := rv.FieldByIndex(f.index)
		switch {
		case f.typ.Kind() == reflect.Slice:
			items := make([]string, fv.Len())
			for j := range items {
				items[j] = fv.Index(j).String()
			}
			b.WriteString("[" + strings.Join(items, ",") + "]")
		case f.typ.Kind() == reflect.String && fv.Len() == 0:
			b.WriteString(`""`)
		default:
			b.WriteString(fmt.Sprint(fv.Interface())) // time.Duration prints as 24h0m0s
		}
	}
	return b.String()
}
