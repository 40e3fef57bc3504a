package proxy

import (
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/logging"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

// Features is what the proxy runs between agent and provider: one hook chain
// per wire API (they differ only in where their intents policy comes from)
// and the policy watchers behind them. It is built once at start-up by
// BuildFeatures and closed at shutdown.
type Features struct {
	chains   map[rewrite.API]*hooks.Chain
	watchers []*policy.Watcher
	// failClosed lists the APIs whose chain enforces intents and fails
	// closed: a request whose session cannot be loaded still runs the chain
	// (on an empty session) rather than passing through.
	failClosed map[rewrite.API]bool
	recovery   bool // some chain has the recovery hook
}

// wireAPIs are the APIs that get a chain. Their names are also the keys of
// intents.routes (config.Intents.PolicySources).
var wireAPIs = []rewrite.API{rewrite.APIAnthropic, rewrite.APIOpenAIChat, rewrite.APIOpenAIResponses, rewrite.APIGemini}

// BuildFeatures builds the hook chains of the features cfg enables, in their
// fixed order (intents, then topics: the intent rule and reminder come first,
// and on the reply side topics claims create_new_topic before intents checks
// the rest), and starts the policy watchers. Events are reported to m and
// log. The binary and the tests build features only through it.
func BuildFeatures(cfg *config.Config, m *Metrics, log *zap.Logger) (*Features, error) {
	log = logging.Redacting(log) // nil gives a no-op logger
	f := &Features{chains: map[rewrite.API]*hooks.Chain{}, failClosed: map[rewrite.API]bool{}}
	// The view cache is process-wide (keyed by content, so servers can
	// share it); the latest configuration sets its size.
	rewrite.SetViewCacheBytes(cfg.Limits.ViewCacheBytes)
	var topics *hooks.Topics
	if t := cfg.Topics; t.Enabled {
		topics = hooks.NewTopics(hooks.TopicsConfig{
			ToolName: t.ToolName, Placement: hooks.Placement(t.Placement),
			Guidance: t.Guidance, Reminder: t.Reminder, NoTopicReminder: t.NoTopicReminder,
			OnTopicChange: m.topicChanges.Inc,
		})
	}
	intents, err := f.buildIntents(cfg, m, log, topics)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	recovery, err := buildRecovery(cfg)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	for _, api := range wireAPIs {
		var hs []hooks.Hook
		if h := intents[api]; h != nil {
			hs = append(hs, h)
		}
		if topics != nil {
			hs = append(hs, topics)
		}
		if recovery != nil && canContinue(api) {
			hs = append(hs, recovery)
			f.recovery = true
		}
		f.chains[api] = hooks.NewChain(hs...)
	}
	return f, nil
}

// buildRecovery makes the truncation-recovery hook, or nil when it is off.
func buildRecovery(cfg *config.Config) (*hooks.Recovery, error) {
	rc := cfg.Recovery
	if !rc.Enabled {
		return nil, nil
	}
	strategies, err := rc.StrategyRules()
	if err != nil {
		return nil, fmt.Errorf("proxy: recovery.strategy: %w", err)
	}
	maxes, err := rc.MaxOutputRules()
	if err != nil {
		return nil, fmt.Errorf("proxy: recovery.max_output_tokens: %w", err)
	}
	hc := hooks.RecoveryConfig{MaxAttempts: rc.MaxAttempts, MinOutputTokens: rc.MinOutputTokens, Instruction: rc.Instruction}
	for _, r := range strategies {
		hc.Prefill = append(hc.Prefill, hooks.ModelRule[bool]{Pattern: r.Pattern, Value: r.Value})
	}
	for _, r := range maxes {
		hc.MaxOutputTokens = append(hc.MaxOutputTokens, hooks.ModelRule[int64]{Pattern: r.Pattern, Value: r.Value})
	}
	return hooks.NewRecovery(hc), nil
}

// canContinue reports whether api's codec and stream splicer support
// truncation recovery.
func canContinue(api rewrite.API) bool {
	if _, ok := rewrite.Continuer(api); !ok {
		return false
	}
	_, ok := rewrite.NewStreamSplicer(api).(rewrite.ContinueSplicer)
	return ok
}

// recovers reports whether some chain runs truncation recovery.
func (f *Features) recovers() bool { return f != nil && f.recovery }

// buildIntents makes one Intents hook per distinct (policy file, workspace
// root) and assigns it to the APIs that use it. An API gets none when
// intents are off, or on auto and its policy file does not exist.
func (f *Features) buildIntents(cfg *config.Config, m *Metrics, log *zap.Logger, topics *hooks.Topics) (map[rewrite.API]*hooks.Intents, error) {
	in := cfg.Intents
	out := map[rewrite.API]*hooks.Intents{}
	if in.Enabled == config.SwitchOff {
		return out, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("proxy: intents: working directory: %w", err)
	}
	pathArgs, err := policy.ParsePathArgs(in.PathArgs)
	if err != nil {
		return nil, fmt.Errorf("proxy: intents.path_args: %w", err)
	}
	shellArgs, err := policy.ParseShellArgs(in.ShellArgs)
	if err != nil {
		return nil, fmt.Errorf("proxy: intents.shell_args: %w", err)
	}
	var exempt []string
	if topics != nil {
		exempt = append(exempt, cfg.Topics.ToolName)
	}
	sources := in.PolicySources(wd)
	built := map[config.PolicySource]*hooks.Intents{}
	for _, api := range wireAPIs {
		key := string(api)
		src := sources[key]
		if h, ok := built[src]; ok {
			out[api] = h
			continue
		}
		if in.Enabled == config.SwitchAuto {
			if _, err := os.Stat(src.File); err != nil {
				continue
			}
		}
		if st, err := os.Stat(src.Root); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("proxy: intents workspace root %q (for %s) is not a directory: %w", src.Root, key, errors.Join(err, errNotDir))
		}
		w, err := policy.Watch(src.File, policy.WatchOptions{OnLoad: policyLogger(src.File, m, log)})
		if err != nil {
			return nil, fmt.Errorf("proxy: watching intents policy %s: %w", src.File, err)
		}
		f.watchers = append(f.watchers, w)
		h := hooks.NewIntents(hooks.IntentsConfig{
			Policy: w.Policy,
			PolicyProblem: func() string {
				if st := w.Status(); st.Error != "" {
					return st.Error
				}
				return src.File + " not loaded"
			},
			Root:          src.Root,
			AlwaysAllowed: in.AlwaysAllowed,
			Exempt:        exempt,
			PathArgs:      pathArgs,
			ShellArgs:     shellArgs,
			AllowUnparsed: in.UnparsedCommands == config.UnparsedAllow,
			InferPaths:    in.InferPathArgs,
			FailOpen:      in.OnError == config.FailOpen,
			OnDecision:    decisionReporter(m, log),
		})
		built[src] = h
		out[api] = h
	}
	if in.OnError == config.FailClosed {
		for api := range out {
			f.failClosed[api] = true
		}
	}
	return out, nil
}

var errNotDir = errors.New("not a directory")

// policyLogger reports policy loads: a good load is logged and counted, a
// bad one is logged as an error (the last good policy stays in force).
func policyLogger(file string, m *Metrics, log *zap.Logger) func(*policy.Policy, error) {
	return func(p *policy.Policy, err error) {
		if err != nil {
			m.policyLoads.WithLabelValues("error").Inc()
			m.policyValid.WithLabelValues(file).Set(0)
			log.Error("intents policy invalid; the last good policy stays in force", zap.String("file", file), zap.Error(err))
			return
		}
		m.policyLoads.WithLabelValues("ok").Inc()
		m.policyValid.WithLabelValues(file).Set(1)
		log.Info("intents policy loaded", zap.String("file", file), zap.Int("intents", len(p.Intents)),
			zap.String("current_intent_id", p.CurrentIntentID), zap.String("sha256", p.Hash))
	}
}

// decisionReporter logs and counts each governance decision.
func decisionReporter(m *Metrics, log *zap.Logger) func(*hooks.Call, state.AuditEntry) {
	return func(call *hooks.Call, e state.AuditEntry) {
		m.intentDecisions.WithLabelValues(e.Decision, e.Rule).Inc()
		fields := []zap.Field{
			zap.String("request_id", call.RequestID), zap.String("route", call.Route), zap.String("session", call.SessionID),
			zap.String("tool", e.Tool), zap.String("call_id", e.CallID), zap.String("decision", e.Decision),
			zap.String("rule", e.Rule), zap.String("intent", e.Intent), zap.String("topic", e.Topic),
		}
		if e.Reason != "" {
			fields = append(fields, zap.String("reason", e.Reason))
		}
		log.Info("intent decision", fields...)
	}
}

// chain returns the chain of api (an empty chain for a nil Features).
func (f *Features) chain(api rewrite.API) *hooks.Chain {
	if f == nil {
		return nil
	}
	return f.chains[api]
}

// failsClosed reports whether api's chain must run even without session
// state (see Features.failClosed).
func (f *Features) failsClosed(api rewrite.API) bool { return f != nil && f.failClosed[api] }

// PolicyStatus reports the state of every watched policy file.
func (f *Features) PolicyStatus() []policy.Status {
	if f == nil {
		return nil
	}
	out := make([]policy.Status, 0, len(f.watchers))
	for _, w := range f.watchers {
		out = append(out, w.Status())
	}
	return out
}

// Close stops the policy watchers. It is idempotent.
func (f *Features) Close() error {
	if f == nil {
		return nil
	}
	var errs []error
	for _, w := range f.watchers {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}
