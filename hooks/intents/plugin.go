package intents

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
)

// Provision implements hooks.Section. The plug-in builds one hook per
// distinct (policy file, workspace root) among the wire APIs
// (intents.routes), each with its own policy watcher, and gives it to the
// chains of the APIs that use it. An API gets none when intents are off,
// or on auto and its policy file does not exist at start-up.
func (c *Config) Provision(env hooks.Env) (hooks.Plugin, error) {
	if c.Enabled == hooks.SwitchOff {
		return nil, nil
	}
	pathArgs, err := policy.ParsePathArgs(c.PathArgs)
	if err != nil {
		return nil, fmt.Errorf("intents.path_args: %w", err)
	}
	shellArgs, err := policy.ParseShellArgs(c.ShellArgs)
	if err != nil {
		return nil, fmt.Errorf("intents.shell_args: %w", err)
	}
	m := newMetrics()
	if err := m.register(env.Metrics); err != nil {
		return nil, err
	}
	var exempt []string
	for _, t := range env.Owned {
		if t != IntentTool {
			exempt = append(exempt, t)
		}
	}
	return &plugin{
		auto: c.Enabled == hooks.SwitchAuto, log: env.Log, m: m, sources: c.PolicySources(env.WorkDir),
		opts: Options{
			AlwaysAllowed: c.AlwaysAllowed,
			Exempt:        exempt,
			PathArgs:      pathArgs,
			ShellArgs:     shellArgs,
			AllowUnparsed: c.UnparsedCommands == UnparsedAllow,
			InferPaths:    c.InferPathArgs,
			FailOpen:      c.OnError == FailOpen,
			Observe:       c.Mode == ModeObserve,
			Events:        env.Events,
		},
		built: map[PolicySource]*Hook{},
	}, nil
}

// plugin is the provisioned intents feature.
type plugin struct {
	auto    bool // intents.enabled auto: an API without a policy file gets no hook
	log     *zap.Logger
	m       *metrics
	sources map[string]PolicySource // by API key
	opts    Options                 // shared by every hook; Policy and Root per source

	mu       sync.Mutex
	built    map[PolicySource]*Hook
	watchers []*policy.Watcher
}

var errNotDir = errors.New("not a directory")

// Hook implements hooks.Plugin.
func (p *plugin) Hook(api hooks.API) (hooks.Hook, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	src, ok := p.sources[api.Key]
	if !ok {
		return nil, fmt.Errorf("intents: no policy source for API %q", api.Key)
	}
	if h, ok := p.built[src]; ok {
		return h, nil
	}
	if p.auto {
		if _, err := os.Stat(src.File); err != nil {
			return nil, nil
		}
	}
	if st, err := os.Stat(src.Root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("intents workspace root %q (for %s) is not a directory: %w", src.Root, api.Key, errors.Join(err, errNotDir))
	}
	w, err := policy.Watch(src.File, policy.WatchOptions{OnLoad: p.policyLogger(src.File)})
	if err != nil {
		return nil, fmt.Errorf("watching intents policy %s: %w", src.File, err)
	}
	p.watchers = append(p.watchers, w)
	o := p.opts
	o.Policy = w.Policy
	o.PolicyProblem = func() string {
		if st := w.Status(); st.Error != "" {
			return st.Error
		}
		return src.File + " not loaded"
	}
	o.Root = src.Root
	o.OnDecision = p.decision
	o.OnOutcome = p.m.outcome
	h := New(o)
	p.built[src] = h
	return h, nil
}

// Close implements hooks.Plugin: it stops the policy watchers.
func (p *plugin) Close() error {
	p.mu.Lock()
	ws := slices.Clone(p.watchers)
	p.mu.Unlock()
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}

// Report implements hooks.Reporter: every watched policy file's status,
// under "policies"; a file not loaded or broken degrades the proxy.
func (p *plugin) Report() (string, any, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.watchers) == 0 {
		return "", nil, false
	}
	out := make([]policy.Status, 0, len(p.watchers))
	degraded := false
	for _, w := range p.watchers {
		st := w.Status()
		out = append(out, st)
		if !st.Loaded || st.Error != "" {
			degraded = true
		}
	}
	return "policies", out, degraded
}

// policyLogger reports policy loads: a good load is logged and counted, a
// bad one is logged as an error (the last good policy stays in force).
func (p *plugin) policyLogger(file string) func(*policy.Policy, error) {
	return func(pol *policy.Policy, err error) {
		if err != nil {
			p.m.policyLoads.WithLabelValues("error").Inc()
			p.m.policyValid.WithLabelValues(file).Set(0)
			p.log.Error("intents policy invalid; the last good policy stays in force", zap.String("file", file), zap.Error(err))
			return
		}
		p.m.policyLoads.WithLabelValues("ok").Inc()
		p.m.policyValid.WithLabelValues(file).Set(1)
		p.log.Info("intents policy loaded", zap.String("file", file), zap.Int("intents", len(pol.Intents)),
			zap.String("current_intent_id", pol.CurrentIntentID), zap.String("sha256", pol.Hash))
	}
}

// decision logs and counts one governance decision.
func (p *plugin) decision(call *hooks.Call, e AuditEntry) {
	p.m.decisions.WithLabelValues(e.Decision, e.Rule).Inc()
	fields := []zap.Field{
		zap.String("request_id", call.RequestID), zap.String("route", call.Route), zap.String("session", call.SessionID),
		zap.String("tool", e.Tool), zap.String("call_id", e.CallID), zap.String("decision", e.Decision),
		zap.String("rule", e.Rule), zap.String("intent", e.Intent), zap.String("topic", e.Topic),
	}
	if e.Reason != "" {
		fields = append(fields, zap.String("reason", e.Reason))
	}
	p.log.Info("intent decision", fields...)
}

// metrics are intents' collectors.
type metrics struct {
	decisions   *prometheus.CounterVec
	policyLoads *prometheus.CounterVec
	policyValid *prometheus.GaugeVec
	outcomes    *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_intent_decisions_total", Help: "Intent governance decisions on tool calls, by decision (allowed, refused, held, would_refuse, would_ask, selected, listed) and the rule that decided.",
		}, []string{"decision", "rule"}),
		policyLoads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_intents_policy_loads_total", Help: "Intents policy load attempts that found a change, by result (ok, error).",
		}, []string{"result"}),
		policyValid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shepherd_intents_policy_valid", Help: "1 when the policy file's latest content is valid and in force, 0 when it is broken (the last good policy stays in force).",
		}, []string{"file"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_intent_allowed_outcomes_total", Help: "What finally happened to the tool calls intent governance allowed, by fate (delivered to the agent, undelivered: the turn ended first, dropped: cut by the output limit).",
		}, []string{"fate"}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.decisions, m.policyLoads, m.policyValid, m.outcomes} {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("intents: registering metrics: %w", err)
		}
	}
	return nil
}

// outcome counts the fate of one allowed call.
func (m *metrics) outcome(fate string) { m.outcomes.WithLabelValues(fate).Inc() }
