package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"github.com/valyala/fasthttp/pprofhandler"

	"github.com/shepherd-proxy/shepherd/console"
	"github.com/shepherd-proxy/shepherd/state"
)

const (
	sessionsPrefix = "/shepherd/v1/sessions"
	pprofPrefix    = "/debug/pprof/"
)

// adminPaths are served by handleAdmin; on a shared listener, every other
// path is proxied.
func isAdminPath(p []byte) bool {
	switch string(p) {
	case "/healthz", "/readyz", "/metrics", eventsPath:
		return true
	}
	return bytes.HasPrefix(p, []byte(sessionsPrefix)) || string(p) == approvalsPath || console.IsPath(p)
}

// handleWithAdmin serves admin paths and proxies everything else; used when
// admin.listen is "".
func (s *Server) handleWithAdmin(ctx *fasthttp.RequestCtx) {
	if isAdminPath(ctx.Path()) {
		s.handleAdmin(ctx)
		return
	}
	s.handle(ctx)
}

// handleAdmin serves:
//   - GET /healthz: 200 while the process serves.
//   - GET /readyz: 200 when the state store answers a ping, else 503, with a
//     JSON detail: the store, and each intents policy file's load status
//     (status "degraded" while a policy file is broken or never loaded).
//   - GET /metrics: Prometheus text format.
//   - GET /shepherd/v1/sessions[?tenant=T&limit=N]: summaries of recent
//     sessions (sessionSummaryJSON).
//   - GET /shepherd/v1/sessions/{id}[?tenant=T][&include=ledger]: one
//     session (sessionJSON); its ledger only with include=ledger.
//   - the approvals API (admin_approvals.go): GET /shepherd/v1/approvals,
//     GET /shepherd/v1/sessions/{id}/approvals, POST
//     /shepherd/v1/sessions/{id}/approvals/{approval}.
//   - the edits API (admin_edits.go): GET /shepherd/v1/sessions/{id}/edits,
//     …/edits/{n} and …/edits/{n}/revert.
//   - /console/...: the web console (package console); its data fragments
//     need the token like the sessions API.
//   - GET /shepherd/v1/events and /shepherd/v1/sessions/{id}/events: the
//     live event feeds, SSE (admin_events.go).
//   - /debug/pprof/...: Go runtime profiles (net/http/pprof's endpoints),
//     only on a dedicated admin listener (admin.listen set): on the shared
//     listener these paths are proxied like any other.
//
// The sessions API and the profiles require "Authorization: Bearer
// <admin.token>" when a token is configured.
func (s *Server) handleAdmin(ctx *fasthttp.RequestCtx) {
	s.serveAdmin(ctx, false)
}

// handleAdminListener is the dedicated admin listener's handler: the admin
// endpoints and the runtime profiles.
func (s *Server) handleAdminListener(ctx *fasthttp.RequestCtx) {
	s.serveAdmin(ctx, true)
}

func (s *Server) serveAdmin(ctx *fasthttp.RequestCtx, dedicated bool) {
	path := string(ctx.Path())
	switch {
	case dedicated && (strings.HasPrefix(path, pprofPrefix) || path == strings.TrimSuffix(pprofPrefix, "/")):
		if !s.adminAuthorized(ctx) {
			writeJSON(ctx, fasthttp.StatusUnauthorized, map[string]string{"error": "admin token required"})
			return
		}
		if path == pprofPrefix {
			pprofIndex(ctx) // pprofhandler answers 404 for paths ending in "/"
			return
		}
		pprofhandler.PprofHandler(ctx)
	case path == "/healthz":
		writeJSON(ctx, fasthttp.StatusOK, map[string]string{"status": "ok"})
	case path == "/readyz":
		s.readyz(ctx)
	case path == "/metrics":
		s.metricsH(ctx)
	case console.IsPath(ctx.Path()):
		s.console.Serve(ctx)
	case isEventsRoute(path):
		s.serveEvents(ctx, path)
	case path == approvalsPath || strings.HasPrefix(path, sessionsPrefix):
		if !s.adminAuthorized(ctx) {
			writeJSON(ctx, fasthttp.StatusUnauthorized, map[string]string{"error": "admin token required"})
			return
		}
		if path == approvalsPath {
			s.listApprovals(ctx)
			return
		}
		if s.sessionApprovals(ctx, strings.Trim(strings.TrimPrefix(path, sessionsPrefix), "/")) {
			return
		}
		if s.sessionEdits(ctx, strings.Trim(strings.TrimPrefix(path, sessionsPrefix), "/")) {
			return
		}
		if !ctx.IsGet() {
			writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
			return
		}
		rest := strings.Trim(strings.TrimPrefix(path, sessionsPrefix), "/")
		if rest == "" {
			s.listSessions(ctx)
			return
		}
		s.getSession(ctx, rest)
	default:
		writeJSON(ctx, fasthttp.StatusNotFound, map[string]string{"error": "not found"})
	}
}

var pprofIndex = fasthttpadaptor.NewFastHTTPHandlerFunc(pprof.Index)

func newMetricsHandler(m *Metrics) fasthttp.RequestHandler {
	return fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
}

func (s *Server) adminAuthorized(ctx *fasthttp.RequestCtx) bool {
	if s.cfg.Admin.Token == "" {
		return true
	}
	got := ctx.Request.Header.Peek("Authorization")
	want := "Bearer " + s.cfg.Admin.Token
	return subtle.ConstantTimeCompare(got, []byte(want)) == 1
}

func (s *Server) readyz(ctx *fasthttp.RequestCtx) {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := map[string]any{"status": "ok", "store": string(s.cfg.State.Backend)}
	// A feature's trouble (a broken policy file) does not make the proxy
	// unready (the last good policy stays in force, or governance fails
	// closed): it is reported as "degraded" with the feature's detail.
	for _, r := range s.features.Reports() {
		out[r.Name] = r.Detail
		if r.Degraded {
			out["status"] = "degraded"
		}
	}
	if err := s.store.Ping(c); err != nil {
		s.metrics.StoreError("ping")
		out["status"], out["detail"] = "unavailable", "state store did not answer"
		writeJSON(ctx, fasthttp.StatusServiceUnavailable, out)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, out)
}

func (s *Server) listSessions(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	limit, _ := strconv.Atoi(string(args.Peek("limit")))
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := s.store.List(c, string(args.Peek("tenant")), limit)
	if err != nil {
		s.metrics.StoreError("list")
		writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": "state store unavailable"})
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"sessions": summariesJSON(list)})
}

// getSession returns one session. Session ids are namespaced by tenant; with
// no ?tenant= the id is looked up among the most recent sessions of every
// tenant and must be unambiguous.
func (s *Server) getSession(ctx *fasthttp.RequestCtx, id string) {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tenant := string(ctx.QueryArgs().Peek("tenant"))
	if tenant == "" {
		var ok bool
		if tenant, ok = s.sessionTenant(ctx, id, "session not found"); !ok {
			return
		}
	}
	sess, err := s.store.Get(c, state.Key{Tenant: tenant, Session: id})
	switch {
	case errors.Is(err, state.ErrNotFound):
		writeJSON(ctx, fasthttp.StatusNotFound, map[string]string{"error": "session not found"})
	case err != nil:
		s.metrics.StoreError("get")
		writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": "state store unavailable"})
	default:
		withLedger := string(ctx.QueryArgs().Peek("include")) == "ledger"
		ans := sessionAnswer(sess, withLedger)
		ans.Budgets = s.budgetCounters(c, state.Key{Tenant: tenant, Session: id})
		writeJSON(ctx, fasthttp.StatusOK, ans)
	}
}

// sessionTenant finds the tenant of session id among the most recent
// sessions of every tenant (the sessions, events and approvals APIs' rule
// when no ?tenant= is given): the id must be unambiguous. It returns false
// when it answered the request (404 with notFound, 409, 503).
func (s *Server) sessionTenant(ctx *fasthttp.RequestCtx, id, notFound string) (string, bool) {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tenants, err := state.SessionTenants(c, s.store, id)
	if err != nil {
		s.metrics.StoreError("list")
		writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": "state store unavailable"})
		return "", false
	}
	switch len(tenants) {
	case 0:
		writeJSON(ctx, fasthttp.StatusNotFound, map[string]string{"error": notFound})
		return "", false
	case 1:
		return tenants[0], true
	default:
		writeJSON(ctx, fasthttp.StatusConflict, map[string]any{"error": "session id exists under several tenants; add ?tenant=", "tenants": tenants})
		return "", false
	}
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = fasthttp.StatusInternalServerError, []byte(`{"error":"encoding failed"}`)
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
