package routing

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/ruleline"
)

// Upstream is a named upstream (key routing.upstreams): a base URL serving
// one provider family's APIs, with an optional credential of its own.
//
// Syntax: "<name> api=<family> base_url=<url> [credential_env=<VAR>]".
type Upstream struct {
	Name string
	// API is the provider family the upstream speaks (anthropic, openai,
	// gemini: a Provider of the descriptor table). Requests of that
	// family's wire APIs only are sent to it.
	API string
	// BaseURL is http or https with a host and an optional path prefix.
	BaseURL string
	// CredentialEnv names an environment variable whose value replaces the
	// agent's credential on requests sent to this upstream, in the wire
	// API's own credential header. It is read once at start-up by the
	// proxy, never logged, stored or reported; "" forwards the agent's own.
	CredentialEnv string
}

// Families lists the provider families of the descriptor table, in its
// order (anthropic, openai, gemini): the names of the built-in upstreams
// (key upstreams.<family>) and the values of an upstream's api.
func Families() []string {
	var out []string
	for _, d := range apis.All() {
		if !slices.Contains(out, d.Provider) {
			out = append(out, d.Provider)
		}
	}
	return out
}

// ParseUpstream parses one routing.upstreams line. It checks the line
// alone; New checks the upstreams together.
func ParseUpstream(line string) (Upstream, error) {
	name, kv, order, err := ruleline.Fields(line)
	if err != nil {
		return Upstream{}, err
	}
	u := Upstream{Name: name}
	if !ruleline.ValidName(name) {
		return u, fmt.Errorf("upstream name %q: use letters, digits, - _ . (at most 64)", name)
	}
	if slices.Contains(Families(), name) {
		return u, fmt.Errorf("upstream name %q is the built-in upstream of that provider (upstreams.%s); choose another name", name, name)
	}
	for _, k := range order {
		v := kv[k]
		switch k {
		case "api":
			if !slices.Contains(Families(), v) {
				return u, fmt.Errorf("upstream %s: api %q is not one of %v", name, v, Families())
			}
			u.API = v
		case "base_url":
			if err := checkBaseURL(v); err != nil {
				return u, fmt.Errorf("upstream %s: base_url %w", name, err)
			}
			u.BaseURL = v
		case "credential_env":
			if !validEnvName(v) {
				return u, fmt.Errorf("upstream %s: credential_env %q is not an environment variable name", name, v)
			}
			u.CredentialEnv = v
		default:
			return u, fmt.Errorf("upstream %s: unknown key %q (known: api, base_url, credential_env)", name, k)
		}
	}
	if u.API == "" || u.BaseURL == "" {
		return u, fmt.Errorf("upstream %s: api and base_url are required", name)
	}
	return u, nil
}

// checkBaseURL applies the rules of the built-in upstreams' base URLs:
// http or https, a host, no query, fragment or user info.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q is not http or https", u.Scheme)
	case u.Host == "":
		return errors.New("has no host")
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		// The URL is not quoted: user info or a query may hold a secret.
		return errors.New("must carry no query, fragment or user info")
	}
	return nil
}

// validEnvName reports whether s is a portable environment variable name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
