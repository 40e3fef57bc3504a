package proxy

import (
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/registry"
	"github.com/shepherd-proxy/shepherd/logging"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/state"
)

// Features is what the proxy runs between agent and provider: the plug-ins
// of hooks/registry provisioned from the configuration, and one hook chain
// per wire API built from them. It is built once at start-up by
// BuildFeatures and closed at shutdown.
type Features struct {
	plugins *registry.Plugins
	chains  map[*rewrite.Descriptor]*hooks.Chain
}

// wireAPIs are the APIs that get a chain. Their names are also their
// configuration keys (hooks.API.Key, as in intents.routes).
var wireAPIs = apis.All()

// BuildFeatures provisions the features cfg enables (hooks/registry, in
// chain order) and builds each wire API's chain from them. The features
// register their metrics on m's registry and log to log. The binary and
// the tests build features only through it (or BuildFeaturesWithEvents).
func BuildFeatures(cfg *config.Config, m *Metrics, log *zap.Logger) (*Features, error) {
	return BuildFeaturesWithEvents(cfg, m, log, nil)
}

// BuildFeaturesWithEvents is BuildFeatures with the live feed the features
// report to (hooks.Env.Events; nil: events.Nop).
func BuildFeaturesWithEvents(cfg *config.Config, m *Metrics, log *zap.Logger, ev events.Emitter) (*Features, error) {
	return BuildFeaturesWith(cfg, m, log, FeatureDeps{Events: ev})
}

// FeatureDeps are what the features may use beyond their configuration.
// Every field is optional.
type FeatureDeps struct {
	// Events is the live feed the features report to (nil: events.Nop).
	Events events.Emitter
	// Journal is the state store's edit journal (nil: edits keeps none).
	Journal state.EditJournal
	// Counters are the state store's exact per-session counters (nil:
	// budgets count nothing and pass every request).
	Counters state.Counters
}

// BuildFeaturesWith is BuildFeatures with the dependencies in deps.
func BuildFeaturesWith(cfg *config.Config, m *Metrics, log *zap.Logger, deps FeatureDeps) (*Features, error) {
	log = logging.Redacting(log) // nil gives a no-op logger
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("proxy: features: working directory: %w", err)
	}
	var reg prometheus.Registerer = prometheus.NewRegistry() // a throwaway without m
	if m != nil {
		reg = m.Registry
	}
	plugins, err := registry.Provision(&cfg.Sections, hooks.Env{Metrics: reg, Log: log, WorkDir: wd,
		Events: emitterOrNop(deps.Events), Journal: deps.Journal, Counters: deps.Counters})
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	f := &Features{plugins: plugins, chains: map[*rewrite.Descriptor]*hooks.Chain{}}
	for _, api := range wireAPIs {
		c, err := plugins.Chain(hooks.API{Key: api.Name, Continues: api.CanContinue()})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("proxy: %w", err), f.Close())
		}
		f.chains[api] = c
	}
	return f, nil
}

// recovers reports whether some chain may ask for continuations.
func (f *Features) recovers() bool {
	if f == nil {
		return false
	}
	for _, c := range f.chains {
		if c.Continues() {
			return true
		}
	}
	return false
}

// chain returns the chain of api (an empty chain for a nil Features).
func (f *Features) chain(api *rewrite.Descriptor) *hooks.Chain {
	if f == nil {
		return nil
	}
	return f.chains[api]
}

// failsClosed reports whether api's chain must run even without session
// state: a hook of it fails closed (hooks.FailClosed), so a request whose
// session cannot be loaded still runs the chain (on an empty session)
// rather than passing through.
func (f *Features) failsClosed(api *rewrite.Descriptor) bool { return f.chain(api).FailsClosed() }

// Reports returns the features' readiness reports (hooks.Reporter).
func (f *Features) Reports() []registry.Report {
	if f == nil {
		return nil
	}
	return f.plugins.Reports()
}

// Close closes the features (stops the policy watchers). It is idempotent.
func (f *Features) Close() error {
	if f == nil {
		return nil
	}
	return f.plugins.Close()
}
