package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/routing"
	"github.com/shepherd-proxy/shepherd/state"
)

// This file applies the routing rules (package routing, docs/routing.md)
// to model requests: the rule a request matches is found before the turn
// begins (a refusal is answered then, before any hook runs); once the
// turn engine has loaded the session, the decision the session began with
// is kept (stickiness), the model is rewritten and the upstream chosen.
// The choice is the exchange's routeTarget, which the first request and
// every follow-up and continuation of the turn use (forward,
// sendFollowUp), so a turn never changes upstream or model midway.

// router is the server's routing: the rule table and one pooled client
// per named upstream, with the credential that replaces the agent's on it.
// Built once in New; nil when no rule is configured.
type router struct {
	table     *routing.Table
	named     map[string]*namedUpstream
	decisions *prometheus.CounterVec
	// needsView: some rule matches on the tool phase, which needs the
	// parsed messages even when no hook runs.
	needsView bool
}

// namedUpstream is a routing.upstreams entry, ready to send to.
type namedUpstream struct {
	up *upstream
	// cred is the value of its credential_env (nil: the agent's own
	// credential is forwarded). Never logged, stored or reported.
	cred []byte
}

// credentialHeaders are the headers the APIs' clients send credentials
// in (every descriptor's Credential.Header): all are removed from a
// request that carries an upstream's own credential instead.
var credentialHeaders = func() []string {
	var out []string
	for _, d := range apis.All() {
		if h := d.Credential.Header; h != "" && !contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}()

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// newRouter builds the router of a validated configuration (nil without
// rules). A credential_env that is not set, or empty, fails start-up: a
// request must never silently go out with the agent's credential to an
// upstream configured with its own.
func newRouter(cfg *config.Config, o upstreamOptions, m *Metrics) (*router, error) {
	table, err := cfg.Routing.Table()
	if err != nil {
		return nil, fmt.Errorf("proxy: routing: %w", err)
	}
	if table.Empty() {
		return nil, nil
	}
	r := &router{table: table, named: map[string]*namedUpstream{}, decisions: routeDecisions(m)}
	for _, u := range table.Upstreams() {
		up, err := newUpstream(Provider(u.API), u.BaseURL, o)
		if err != nil {
			return nil, fmt.Errorf("proxy: routing upstream %s: %w", u.Name, err)
		}
		n := &namedUpstream{up: up}
		if u.CredentialEnv != "" {
			v := os.Getenv(u.CredentialEnv)
			if v == "" {
				return nil, fmt.Errorf("proxy: routing upstream %s: credential_env %s is not set or empty", u.Name, u.CredentialEnv)
			}
			n.cred = []byte(v)
		}
		r.named[u.Name] = n
	}
	r.needsView = table.UsesPhase()
	return r, nil
}

// routeDecisions is shepherd_route_decisions_total on the server's
// registry (shared when several servers share the metrics).
func routeDecisions(m *Metrics) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shepherd_route_decisions_total",
		Help: "Routing decisions by rule (none: the session's default), upstream and outcome (routed: a rule decided now; sticky: the session's earlier decision was kept; refused).",
	}, []string{"rule", "upstream", "outcome"})
	if err := m.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return c
}

// routeTarget is where a routed request goes; the zero value is the
// route's own provider with the agent's model and credential.
type routeTarget struct {
	up *upstream // nil: the route's provider
	// model is the model the request is sent with ("" keeps the agent's).
	model string
	// path is the request path naming model on APIs that name it in the
	// path (nil keeps the agent's).
	path []byte
	// cred replaces the agent's credential (nil keeps it); api says in
	// which header.
	cred []byte
	api  *rewrite.Descriptor
}

// routeState is the exchange's routing: the request as rules see it and
// the rule it matched, from routeMatch to routeSelect.
type routeState struct {
	q    *routing.Request
	rule *routing.Rule
}

// upstreamOf is the upstream the exchange's requests go to.
func (s *Server) upstreamOf(x *exchange) *upstream {
	if x.target.up != nil {
		return x.target.up
	}
	return s.upstreams[x.route.provider]
}

// apply rewrites an upstream request (prepared by prepareUpstreamRequest
// for u) for the target: the model in the path, the credential.
func (tg *routeTarget) apply(req *fasthttp.Request, u *upstream) {
	if tg.path != nil {
		p := make([]byte, 0, len(u.prefix)+len(tg.path))
		p = append(append(p, u.prefix...), tg.path...)
		req.URI().SetPathBytes(p)
	}
	if tg.cred == nil {
		return
	}
	for _, h := range credentialHeaders {
		req.Header.Del(h)
	}
	if uri := req.URI(); uri.QueryArgs().Has("key") {
		uri.QueryArgs().Del("key") // Gemini's query-string API key
		uri.SetQueryStringBytes(uri.QueryArgs().QueryString())
	}
	v := make([]byte, 0, len(tg.api.Credential.Prefix)+len(tg.cred))
	v = append(append(v, tg.api.Credential.Prefix...), tg.cred...)
	req.Header.SetBytesV(tg.api.Credential.Header, v)
}

// followUpBody is body (a follow-up or continuation the turn engine built
// from the agent's request) with the target's model.
func (tg *routeTarget) followUpBody(body []byte) ([]byte, error) {
	if tg.model == "" || tg.api == nil || tg.api.ModelInPath {
		return body, nil
	}
	_, out, err := tg.api.SetModel(nil, body, tg.model)
	return out, err
}

// subagentHeaders mark a subagent's request: Claude Code's agent id,
// Codex's subagent marker.
var subagentHeaders = []string{"X-Claude-Code-Agent-Id", "X-Openai-Subagent"}

// routeMatch describes a model request for the rules and finds the rule
// it matches. A refusal is answered here (false): in the API's error
// shape, before the session is loaded or any hook runs.
func (s *Server) routeMatch(ctx *fasthttp.RequestCtx, x *exchange, in *inspection, body []byte) bool {
	if s.router == nil || !x.route.inspect || x.route.api == nil {
		return true
	}
	api := x.route.api
	sub := false
	for _, h := range subagentHeaders {
		if len(ctx.Request.Header.Peek(h)) > 0 {
			sub = true
		}
	}
	q := &routing.Request{
		API: api.Name, Family: api.Provider,
		Model:       api.RequestModel(ctx.URI().PathOriginal(), body),
		Agent:       x.call.Agent,
		Kind:        routing.KindOf(rewrite.SideRequest(x.codec, body), sub),
		InputTokens: routing.EstimateTokens(len(body)),
	}
	view := in.view
	if view == nil && s.router.needsView {
		view, _ = x.codec.ParseRequest(body) // a body the codec cannot read has no phase
	}
	q.Phase = routing.PhaseOf(view, isEditTool)
	x.routing = routeState{q: q, rule: s.router.table.Match(q)}
	if r := x.routing.rule; r != nil && r.Refuse != "" {
		s.routeRefused(ctx, x, r)
		return false
	}
	return true
}

// editTools are the tools whose calls write files: the built-in rules of
// the edits recognizer, but its read and shell tools (a command's output is
// no edit's result).
var editTools = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range recognize.Builtin() {
		if r.Kind != recognize.KindRead && r.Kind != recognize.KindShell {
			m[r.Tool] = true
		}
	}
	return m
}()

// isEditTool reports whether name is a file-edit tool (editTools).
func isEditTool(name string) bool { return editTools[name] }

// routeRefused answers a request a rule refuses: 403 in the route's API
// error shape.
func (s *Server) routeRefused(ctx *fasthttp.RequestCtx, x *exchange, r *routing.Rule) {
	q := x.routing.q
	s.router.decisions.WithLabelValues(r.Name, "", "refused").Inc()
	s.log.Info("request refused by routing rule", zap.String("request_id", x.requestID), zap.String("route", x.route.name),
		zap.String("rule", r.Name), zap.String("requested_model", q.Model), zap.String("session", x.call.SessionID))
	s.emitRoute(x, map[string]any{"rule": r.Name, "requested_model": q.Model, "model": "", "upstream": "", "sticky": false, "refused": true})
	writeErrorStatus(ctx, x.route.provider, fasthttp.StatusForbidden, r.Refuse)
	s.finish(ctx, x, fasthttp.StatusForbidden)
}

// routeSelect decides the request's route once its turn has begun (t nil:
// no turn runs) and returns the body to send upstream. The session's
// decision for the request's lane is read from the turn's session, or for
// a request no turn runs on from the store (one read: such requests, with
// the features off or on routes the engine does not serve, still keep
// their session's route); a first decision is saved with the turn, or
// recorded off the request path. A body or path that cannot carry the
// model is sent as the agent wrote it (fail-open), logged and counted.
func (s *Server) routeSelect(ctx *fasthttp.RequestCtx, x *exchange, t *turn.Turn, begun bool, body []byte) []byte {
	q := x.routing.q
	if q == nil {
		return body
	}
	lane := routing.Lane(q.Kind)
	keyed := x.call.SessionID != "" && x.sessionSource != sourceOpening
	var rec *state.Route
	switch {
	case lane == "":
	case t != nil:
		if sess, ok := t.Session(); ok {
			if r, ok := sess.Routes[lane]; ok {
				rec = &r
			}
		}
	case keyed && !begun:
		rec = s.storedRoute(x, lane)
	}
	d := s.router.table.Decide(q, x.routing.rule, rec, lane)
	if d.Record && !x.route.noTurn {
		fx := recordRoute(lane, d.Route)
		switch {
		case t != nil:
			t.AddEffect(fx)
		case keyed:
			s.recorder.apply(state.Key{Tenant: x.call.Tenant, Session: x.call.SessionID}, fx)
		}
	}
	out, err := s.target(ctx, x, d.Route, body)
	if err != nil {
		s.metrics.hookErrors.WithLabelValues("routing").Inc()
		s.log.Warn("routing: the request goes out as the agent sent it", zap.String("request_id", x.requestID),
			zap.String("route", x.route.name), zap.Error(err))
		x.target = routeTarget{}
		return body
	}
	s.routeDecided(x, d)
	return out
}

// target sets the exchange's routeTarget for route and returns the body
// naming its model.
func (s *Server) target(ctx *fasthttp.RequestCtx, x *exchange, r state.Route, body []byte) ([]byte, error) {
	api := x.route.api
	tg := routeTarget{api: api}
	if n, ok := s.router.named[r.Upstream]; ok {
		tg.up, tg.cred = n.up, n.cred
	} else if r.Upstream != x.route.api.Provider {
		return nil, fmt.Errorf("upstream %q serves another provider than %s", r.Upstream, api.Provider)
	}
	if r.Model != "" && r.Model != r.RequestedModel {
		tg.model = r.Model
		path, out, err := api.SetModel(ctx.URI().PathOriginal(), body, r.Model)
		if err != nil {
			return nil, err
		}
		if api.ModelInPath {
			tg.path = path
		}
		body = out
	}
	x.target = tg
	return body, nil
}

// recordRoute is the session change that records a lane's decision.
func recordRoute(lane string, r state.Route) func(*state.Session) {
	return func(s *state.Session) {
		if s.Routes == nil {
			s.Routes = map[string]state.Route{}
		}
		s.Routes[lane] = r
	}
}

// storedRoute reads a lane's decision from the session in the store (nil
// when there is none or the store cannot say: the rules then decide).
func (s *Server) storedRoute(x *exchange, lane string) *state.Route {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout(s.cfg))
	defer cancel()
	sess, err := s.store.Get(ctx, state.Key{Tenant: x.call.Tenant, Session: x.call.SessionID})
	if err != nil {
		if !errors.Is(err, state.ErrNotFound) {
			s.metrics.StoreError("get")
		}
		return nil
	}
	if r, ok := sess.Routes[lane]; ok {
		return &r
	}
	return nil
}

// routeDecided makes a decision visible: the metric, a log line (info when
// the request goes elsewhere than it asked, debug otherwise) and the
// route.selected event. A request no rule matched and whose session kept
// no rule's decision is not reported: it goes where it always went.
func (s *Server) routeDecided(x *exchange, d routing.Decision) {
	if d.Rule == nil && d.Route.Rule == "" {
		return
	}
	rule, outcome := d.Route.Rule, "routed"
	if d.Sticky {
		outcome = "sticky"
	}
	label := rule
	if label == "" {
		label = "none"
	}
	s.router.decisions.WithLabelValues(label, d.Route.Upstream, outcome).Inc()
	lvl := zap.DebugLevel
	if d.Route.Model != d.Route.RequestedModel || d.Route.Upstream != x.route.api.Provider {
		lvl = zap.InfoLevel
	}
	if ce := s.log.Check(lvl, "request routed"); ce != nil {
		matched := ""
		if d.Rule != nil {
			matched = d.Rule.Name
		}
		ce.Write(zap.String("request_id", x.requestID), zap.String("route", x.route.name), zap.String("session", x.call.SessionID),
			zap.String("rule", rule), zap.String("matched_rule", matched), zap.String("requested_model", d.Route.RequestedModel),
			zap.String("model", d.Route.Model), zap.String("upstream", d.Route.Upstream), zap.Bool("sticky", d.Sticky))
	}
	s.emitRoute(x, map[string]any{
		"rule": rule, "requested_model": d.Route.RequestedModel, "model": d.Route.Model,
		"upstream": d.Route.Upstream, "sticky": d.Sticky, "refused": false,
	})
}

// emitRoute sends route.selected to the live feed of the request's session.
func (s *Server) emitRoute(x *exchange, data map[string]any) {
	if _, off := s.events.(events.Nop); off || x.call.SessionID == "" {
		return
	}
	s.events.Emit(events.Event{
		Type: events.RouteSelected, At: time.Now(), Session: x.call.SessionID, Tenant: x.call.Tenant,
		Route: x.route.name, RequestID: x.requestID, Data: data,
	})
}
