package hooks

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
)

// A feature is a plug-in with a lifecycle:
//
//  1. Its configuration section is a Go struct in the feature's package (its
//     Config) that implements Section. The configuration loader decodes the
//     section of the file, the environment and flags into it (over
//     SetDefaults), and calls Validate once at start-up, listing every
//     problem of every section together.
//  2. Provision builds the plug-in from the validated section and an Env:
//     it registers its metrics on Env.Metrics and starts what it needs
//     (file watchers). A section that turns the feature off provisions
//     nothing.
//  3. Hook gives the plug-in's hook for each wire API's chain (the same hook
//     for every API, a hook per API, or none for some).
//  4. Close, at shutdown, stops what Provision started.
//
// The registry (package hooks/registry) lists the sections in chain order;
// adding a feature is one package and one line there.

// Section is a feature's configuration section, implemented by a pointer
// to the feature's Config struct. Its fields carry mapstructure tags: they
// are the section's keys (topics.placement, SHEPHERD_TOPICS_PLACEMENT).
type Section interface {
	// SetDefaults sets every field to its default, the value used when no
	// file, environment variable or flag sets its key.
	SetDefaults()
	// Validate returns every problem of the section, each naming its full
	// key (e.g. topics.placement). It has no side effects: it reads no
	// files and opens nothing.
	Validate() []Problem
	// OwnedTools lists the tools the feature, as configured, answers or
	// tracks itself (nil when it is off). Other features leave calls of
	// these tools alone (Env.Owned).
	OwnedTools() []string
	// Provision builds the feature from the validated section, or returns
	// (nil, nil) when the section turns it off. Its errors (and those of
	// the plug-in's Hook) name the feature or the key at fault.
	Provision(env Env) (Plugin, error)
}

// Plugin is a provisioned feature.
type Plugin interface {
	// Hook returns the plug-in's hook for api's chain, or nil to leave that
	// chain without it. It is called once per API, at start-up.
	Hook(api API) (Hook, error)
	// Close releases what Provision and Hook started. It is idempotent.
	Close() error
}

// Reporter is implemented by a plug-in whose state is worth reporting on the
// readiness endpoint (intents: its policy files).
type Reporter interface {
	// Report returns the name the detail is reported under ("" for nothing
	// to report), the detail (JSON-encodable) and whether it degrades the
	// proxy (ready, but not in the state configured).
	Report() (name string, detail any, degraded bool)
}

// API describes one wire API's chain to a plug-in.
type API struct {
	// Key is the API's configuration name (anthropic, openai_chat,
	// openai_responses, gemini), as in per-API settings such as
	// intents.routes.<key>.
	Key string
	// Continues reports whether the API's codec and stream splicer can
	// continue a reply cut by the output limit.
	Continues bool
}

// Env is what provisioning gives a plug-in.
type Env struct {
	// Metrics is where the plug-in registers its collectors; never nil.
	Metrics prometheus.Registerer
	// Log is the plug-in's logger; never nil.
	Log *zap.Logger
	// WorkDir is the proxy's working directory, the base of relative
	// paths.
	WorkDir string
	// Owned lists the tools other enabled plug-ins answer or track
	// themselves (their Section.OwnedTools).
	Owned []string
	// Events is the live feed a plug-in reports what it decided to
	// (chapter opened, intent selected); never nil (events.Nop when the
	// feed is off).
	Events events.Emitter
	// Journal is the state store's edit journal (the edits feature
	// writes it); nil when the store keeps none.
	Journal state.EditJournal
	// Counters are the state store's exact per-session counters (the
	// budgets feature keeps its spend there); nil when the store keeps
	// none.
	Counters state.Counters
}

// Problem is one invalid setting of a configuration section.
type Problem struct {
	// Key is the full dotted key at fault, e.g. "topics.placement".
	Key string
	// Msg says what is wrong with it.
	Msg string
}

// Problems accumulates problems in the order checks run.
type Problems []Problem

// Add appends a problem with a formatted message.
func (p *Problems) Add(key, format string, args ...any) {
	*p = append(*p, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Switch is a three-way setting: auto, true or false. The configuration
// loader decodes YAML booleans and the strings "true", "false" and "auto"
// into it.
type Switch string

// Switch values.
const (
	SwitchAuto Switch = "auto"
	SwitchOn   Switch = "true"
	SwitchOff  Switch = "false"
)

// ToolName reports whether s is a tool name every provider accepts (1-64
// letters, digits, _ or -).
func ToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
