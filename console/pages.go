package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/state"
)

// shellData is what a page shell carries: no session data, only where its
// fragments and its event feed are.
type shellData struct {
	Title string
	// Feed is the event feed the page follows.
	Feed string
	// Session and Tenant are set on a session page.
	Session, Tenant string
	// Fragment, Approvals and Edits are the fragment URLs of a session page.
	Fragment, Approvals, Edits string
}

// sessionShell serves /console/sessions/{id}.
func (h *Handler) sessionShell(ctx *fasthttp.RequestCtx, id string) {
	if id == "" || strings.Contains(id, "/") {
		ctx.Error("not found", fasthttp.StatusNotFound)
		return
	}
	tenant := string(ctx.QueryArgs().Peek("tenant"))
	esc := url.PathEscape(id)
	h.render(ctx, "page_session", shellData{
		Title:     "Session " + id,
		Feed:      withTenant("/shepherd/v1/sessions/"+esc+"/events", tenant, nil),
		Session:   id,
		Tenant:    tenant,
		Fragment:  withTenant(Prefix+"/f/sessions/"+esc, tenant, nil),
		Approvals: withTenant(Prefix+"/f/approvals", tenant, url.Values{"session": {id}}),
		Edits:     editsFragmentURL(id, tenant),
	})
}

// listData is the sessions fragment's data.
type listData struct {
	Rows   []sessionRow
	Total  int // sessions read before filtering
	Agents []string
	Now    time.Time
	Error  string
}

// sessionsFragment serves /console/f/sessions.
func (h *Handler) sessionsFragment(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	f := listFilter{Q: strings.TrimSpace(string(args.Peek("q"))), Agent: strings.TrimSpace(string(args.Peek("agent"))),
		Refused: string(args.Peek("refused")) == "1"}
	c, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	d := listData{Now: h.now()}
	list, err := h.store.List(c, "", listLimit)
	if err != nil {
		h.log.Warn("console: listing sessions", zap.Error(err))
		d.Error = "The state store did not answer."
	}
	d.Total = len(list)
	for _, s := range list {
		r := rowOf(s)
		if r.Agent != "" && !slices.Contains(d.Agents, r.Agent) {
			d.Agents = append(d.Agents, r.Agent)
		}
		if f.keep(r) {
			d.Rows = append(d.Rows, r)
		}
	}
	slices.Sort(d.Agents)
	sortRows(d.Rows)
	h.render(ctx, "frag_sessions", d)
}

// sessionData is the session fragment's data.
type sessionData struct {
	*sessionView
	Now     time.Time
	Missing string // why there is no session to show
}

// sessionFragment serves /console/f/sessions/{id}.
func (h *Handler) sessionFragment(ctx *fasthttp.RequestCtx, id string) {
	tenant := string(ctx.QueryArgs().Peek("tenant"))
	c, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	d := sessionData{Now: h.now()}
	sess, err := h.findSession(c, id, tenant)
	switch {
	case errors.Is(err, state.ErrNotFound):
		d.Missing = "No session " + strconv.Quote(id) + " (it may have expired)."
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	case errors.Is(err, errAmbiguous):
		d.Missing = "Several tenants have a session " + strconv.Quote(id) + ": open it from the sessions list."
		ctx.SetStatusCode(fasthttp.StatusConflict)
	case err != nil:
		h.log.Warn("console: reading a session", zap.Error(err))
		d.Missing = "The state store did not answer."
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
	default:
		evs := h.sessionEvents(c, state.Key{Tenant: sess.Tenant, Session: sess.ID})
		d.sessionView = buildSession(sess, evs, h.events != nil)
	}
	h.render(ctx, "frag_session", d)
}

// approvalsData is the approvals fragment's data.
type approvalsData struct {
	Items       []approvalView
	Unavailable bool // the store keeps no approvals
	OneSession  bool
	Error       string
}

// approvalsFragment serves /console/f/approvals[?session=&tenant=].
func (h *Handler) approvalsFragment(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	id, tenant := string(args.Peek("session")), string(args.Peek("tenant"))
	c, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	d := approvalsData{Unavailable: h.approvals == nil, OneSession: id != ""}
	list, err := h.pendingApprovals(c, tenant, id)
	if err != nil {
		h.log.Warn("console: listing approvals", zap.Error(err))
		d.Error = "The state store did not answer."
	}
	for _, a := range list {
		d.Items = append(d.Items, approvalOf(a))
	}
	h.render(ctx, "frag_approvals", d)
}

// approvalAction is the approvals API URL that decides a.
func approvalAction(a state.Approval) string {
	return withTenant("/shepherd/v1/sessions/"+url.PathEscape(a.Session)+"/approvals/"+url.PathEscape(a.ID), a.Tenant, nil)
}

// funcs are the templates' formatting helpers.
var funcs = template.FuncMap{
	"tokens": tokens,
	"cost":   func(f float64) string { return fmt.Sprintf("$%.4f", f) },
	"ts":     func(t time.Time) string { return stamp(t) },
	"iso": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"ago": ago,
	"ms": func(n int64) string {
		if n < 1000 {
			return fmt.Sprintf("%d ms", n)
		}
		return fmt.Sprintf("%.1f s", float64(n)/1000)
	},
	"short": func(s string) string {
		r := []rune(s)
		if len(r) <= 22 {
			return s
		}
		return string(r[:20]) + "…"
	},
}

// tokens formats a count with thousands separators.
func tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// stamp is a time in UTC as the pages print it ("" for the zero time); the
// script rewrites it in the reader's time zone.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago is how long before now t was, coarsely.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
