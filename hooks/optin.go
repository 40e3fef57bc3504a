package hooks

import (
	"slices"
	"strings"
)

// FeaturesHeader is the request header an agent or app names opt-in
// features in (a comma-separated list of section names, e.g.
// "compaction, format"), for features whose enabled key is "header".
const FeaturesHeader = "X-Shepherd-Features"

// KnownAPIs are the configuration names of the wire APIs, the values a
// Scope's apis key may list. Package rewrite/apis is the source of truth;
// a test there checks this list against it (hooks may not import codecs).
var KnownAPIs = []string{"anthropic", "openai_chat", "openai_responses", "gemini"}

// OptIn says when an opt-in feature acts: never ("false", the default),
// on every request of the APIs it joins ("true"), or only on requests whose
// FeaturesHeader names the feature ("header"). The configuration loader
// decodes YAML booleans into it like a Switch.
type OptIn string

// OptIn values.
const (
	OptInOff    OptIn = "false"
	OptInOn     OptIn = "true"
	OptInHeader OptIn = "header"
)

// Scope is the switch of an opt-in feature. A feature's Config embeds it
// with `mapstructure:",squash"`, giving the keys <section>.enabled and
// <section>.apis.
type Scope struct {
	// Enabled: key <section>.enabled; false (default), true or header.
	Enabled OptIn `mapstructure:"enabled"`
	// APIs: key <section>.apis; the wire APIs whose chains the feature
	// joins (anthropic, openai_chat, openai_responses, gemini); empty
	// (default) joins all.
	APIs []string `mapstructure:"apis"`
}

// Off reports whether the feature never acts (provision nothing).
func (s Scope) Off() bool { return s.Enabled == "" || s.Enabled == OptInOff }

// Joins reports whether the feature joins api's chain.
func (s Scope) Joins(api API) bool {
	return !s.Off() && (len(s.APIs) == 0 || slices.Contains(s.APIs, api.Key))
}

// Active reports whether the feature named feature acts on call: always
// when enabled is true, and with enabled header only when the request's
// FeaturesHeader names it.
func (s Scope) Active(call *Call, feature string) bool {
	switch s.Enabled {
	case OptInOn:
		return true
	case OptInHeader:
		return call != nil && call.OptedIn(feature)
	}
	return false
}

// Validate adds the problems of the scope of section (its key prefix).
func (s Scope) Validate(section string, p *Problems) {
	switch s.Enabled {
	case "", OptInOff, OptInOn, OptInHeader:
	default:
		p.Add(section+".enabled", "%q is not one of false, true, header", string(s.Enabled))
	}
	for _, a := range s.APIs {
		if !slices.Contains(KnownAPIs, a) {
			p.Add(section+".apis", "%q is not a wire API (want one of %s)", a, strings.Join(KnownAPIs, ", "))
		}
	}
}

// ParseFeatures reads a FeaturesHeader value: the names it lists, trimmed
// and lower-cased, empty ones dropped. nil for an empty value.
func ParseFeatures(v []byte) []string {
	if len(v) == 0 {
		return nil
	}
	var out []string
	for f := range strings.SplitSeq(string(v), ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Plugin is the plug-in of an opt-in feature with one hook for every API:
// it gives h to the chains the scope joins and has nothing to close.
func (s Scope) Plugin(h Hook) Plugin { return scopedPlugin{scope: s, h: h} }

type scopedPlugin struct {
	scope Scope
	h     Hook
}

func (p scopedPlugin) Hook(api API) (Hook, error) {
	if !p.scope.Joins(api) {
		return nil, nil
	}
	return p.h, nil
}

func (p scopedPlugin) Close() error { return nil }
