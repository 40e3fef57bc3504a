package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/state"
)

// approvalsPath lists the pending approvals of every session.
const approvalsPath = "/shepherd/v1/approvals"

// maxApprovalNote bounds the note a decision may carry (it is given to the
// model with a denial).
const maxApprovalNote = 2000

// The approvals API (docs/approvals.md), behind the admin token like the
// sessions API:
//   - GET /shepherd/v1/approvals[?tenant=T&limit=N]: pending approvals of
//     every session, oldest first.
//   - GET /shepherd/v1/sessions/{id}/approvals[?tenant=T]: the session's
//     pending approvals.
//   - POST /shepherd/v1/sessions/{id}/approvals/{approval}[?tenant=T] with
//     {"decision":"approve"|"deny","note":"…","by":"console"|"api"}: 200
//     and the approval as decided; 400 a bad body, 404 an unknown
//     approval, 409 one already decided or expired.

// listApprovals answers GET /shepherd/v1/approvals.
func (s *Server) listApprovals(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() {
		writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
		return
	}
	apps, ok := s.approvals(ctx)
	if !ok {
		return
	}
	limit, _ := strconv.Atoi(string(ctx.QueryArgs().Peek("limit")))
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := apps.PendingApprovals(c, string(ctx.QueryArgs().Peek("tenant")), limit)
	if err != nil {
		s.storeUnavailable(ctx, "pending_approvals")
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"approvals": nonNil(list)})
}

// sessionApprovals serves rest, the part of a sessions-API path after the
// prefix, when it is "{id}/approvals" or "{id}/approvals/{approval}", and
// reports whether it did.
func (s *Server) sessionApprovals(ctx *fasthttp.RequestCtx, rest string) bool {
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[1] != "approvals" || parts[0] == "" {
		return false
	}
	apps, ok := s.approvals(ctx)
	if !ok {
		return true
	}
	session := parts[0]
	if len(parts) == 2 {
		if !ctx.IsGet() {
			writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
			return true
		}
		s.listSessionApprovals(ctx, apps, session)
		return true
	}
	if !ctx.IsPost() {
		writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
		return true
	}
	s.decideApproval(ctx, apps, session, parts[2])
	return true
}

// approvals is the store's approvals, or false after answering 501 when it
// keeps none.
func (s *Server) approvals(ctx *fasthttp.RequestCtx) (state.Approvals, bool) {
	apps := approvalsOf(s.store)
	if apps == nil {
		writeJSON(ctx, fasthttp.StatusNotImplemented, map[string]string{"error": "the state store keeps no approvals"})
		return nil, false
	}
	return apps, true
}

func (s *Server) listSessionApprovals(ctx *fasthttp.RequestCtx, apps state.Approvals, session string) {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tenant := string(ctx.QueryArgs().Peek("tenant"))
	list, err := apps.PendingApprovals(c, tenant, 10000)
	if err != nil {
		s.storeUnavailable(ctx, "pending_approvals")
		return
	}
	out := list[:0]
	for _, a := range list {
		if a.Session == session {
			out = append(out, a)
		}
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"approvals": nonNil(out)})
}

// decisionBody is what POST .../approvals/{approval} takes.
type decisionBody struct {
	Decision string `json:"decision"`
	Note     string `json:"note"`
	By       string `json:"by"`
}

func (s *Server) decideApproval(ctx *fasthttp.RequestCtx, apps state.Approvals, session, id string) {
	var body decisionBody
	dec := json.NewDecoder(strings.NewReader(string(ctx.PostBody())))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "the body must be a JSON object {decision, note, by}: " + err.Error()})
		return
	}
	var decision string
	switch body.Decision {
	case "approve":
		decision = state.ApprovalApproved
	case "deny":
		decision = state.ApprovalDenied
	default:
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": `decision must be "approve" or "deny"`})
		return
	}
	switch body.By {
	case "":
		body.By = "api"
	case "api", "console":
	default:
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": `by must be "console" or "api"`})
		return
	}
	if len(body.Note) > maxApprovalNote {
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "note longer than " + strconv.Itoa(maxApprovalNote) + " bytes"})
		return
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tenant, ok := s.approvalTenant(ctx, c, apps, session, id)
	if !ok {
		return
	}
	key := state.Key{Tenant: tenant, Session: session}
	a, err := apps.DecideApproval(c, key, id, decision, body.By, body.Note)
	switch {
	case errors.Is(err, state.ErrNotFound):
		writeJSON(ctx, fasthttp.StatusNotFound, map[string]string{"error": "approval not found"})
	case errors.Is(err, state.ErrDecided):
		out := map[string]any{"error": "approval already decided or expired"}
		if got, gerr := apps.GetApproval(c, key, id); gerr == nil {
			out["approval"] = got
		}
		writeJSON(ctx, fasthttp.StatusConflict, out)
	case err != nil:
		s.storeUnavailable(ctx, "decide_approval")
	default:
		writeJSON(ctx, fasthttp.StatusOK, a)
	}
}

// approvalTenant finds the tenant of a session's approval: ?tenant= when
// given; otherwise the tenant of the pending approval, or of the session
// (as getSession finds it), which must be unambiguous. false: answered.
func (s *Server) approvalTenant(ctx *fasthttp.RequestCtx, c context.Context, apps state.Approvals, session, id string) (string, bool) {
	if t := ctx.QueryArgs().Peek("tenant"); len(t) > 0 {
		return string(t), true
	}
	seen := map[string]bool{}
	var tenants []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			tenants = append(tenants, t)
		}
	}
	pending, err := apps.PendingApprovals(c, "", 10000)
	if err != nil {
		s.storeUnavailable(ctx, "pending_approvals")
		return "", false
	}
	for _, a := range pending {
		if a.Session == session && a.ID == id {
			add(a.Tenant)
		}
	}
	switch len(tenants) {
	case 0:
		// Decided or expired (a 409 to come), or never held (404): the
		// session's tenant.
		return s.sessionTenant(ctx, session, "approval not found")
	case 1:
		return tenants[0], true
	}
	writeJSON(ctx, fasthttp.StatusConflict, map[string]any{"error": "session id exists under several tenants; add ?tenant=", "tenants": tenants})
	return "", false
}

func (s *Server) storeUnavailable(ctx *fasthttp.RequestCtx, op string) {
	s.metrics.StoreError(op)
	writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": "state store unavailable"})
}

func nonNil(list []state.Approval) []state.Approval {
	if list == nil {
		return []state.Approval{}
	}
	return list
}
