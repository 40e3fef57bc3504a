// Package console is shepherd's web console: a few server-rendered pages on
// the admin listener that show every session live (its chapters, tool-call
// decisions, tokens and cost) and let a person approve or deny held calls.
//
// Everything it serves is embedded in the binary (html/template pages, one
// stylesheet, one small script): no build step, no CDN, it works offline.
//
// Routes (all GET; Prefix is "/console"):
//   - /console/ and /console/sessions/{id}[?tenant=T]: page shells. They
//     carry no data and need no token, so a link to a session can be shared.
//   - /console/static/{console.css,console.js}: the stylesheet and script.
//   - /console/f/sessions[?q=&agent=&refused=1], /console/f/sessions/{id}
//     [?tenant=T], /console/f/approvals[?session=ID&tenant=T],
//     /console/f/edits/{id}[?tenant=T] and /console/f/edits/{id}/revert/{n}
//     (the edit journal, edits.go): the data
//     fragments (HTML), read from the state store at each request. They need
//     the admin token ("Authorization: Bearer <admin.token>") when one is
//     configured, like the sessions API.
//
// The script asks for the token once, keeps it in the tab's sessionStorage
// and sends it only as a header, never in a URL. It follows the event feed
// (GET /shepherd/v1/events, /shepherd/v1/sessions/{id}/events) with fetch
// and a ReadableStream, because EventSource cannot send a header, and
// refreshes the fragments an event touches. Approve and Deny post to the
// approvals API (POST /shepherd/v1/sessions/{id}/approvals/{approval}).
//
// Nothing from an agent is trusted: every value is escaped by html/template,
// and the pages forbid inline scripts and every origin but their own
// (Content-Security-Policy).
package console

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/state"
)

// Prefix is the path under which the console is served.
const Prefix = "/console"

var (
	rootPath   = []byte(Prefix)
	prefixPath = []byte(Prefix + "/")
)

// IsPath reports whether the request path p belongs to the console. It does
// not allocate: the shared listener asks it for every request.
func IsPath(p []byte) bool {
	return bytes.Equal(p, rootPath) || bytes.HasPrefix(p, prefixPath)
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Handler.
type Options struct {
	// Store is read for every fragment. When it also implements
	// state.EventLog and state.Approvals the session page shows events and
	// the pending approvals; without them those parts say they are
	// unavailable.
	Store state.Store
	// Authorized reports whether a request carries the admin token (or none
	// is configured). Nil authorizes every request.
	Authorized func(*fasthttp.RequestCtx) bool
	// Logger receives store and rendering errors; nil discards them.
	Logger *zap.Logger
	// Now is the clock (time left on approvals); nil is time.Now.
	Now func() time.Time
}

// Handler serves the console. Build it with New; it is safe for concurrent
// use.
type Handler struct {
	store     state.Store
	events    state.EventLog  // nil when the store keeps no events
	approvals state.Approvals // nil when the store keeps no approvals
	authorize func(*fasthttp.RequestCtx) bool
	log       *zap.Logger
	now       func() time.Time
	pages     *template.Template
}

// New builds a Handler. It panics only if the embedded templates do not
// parse, which the package's tests rule out.
func New(o Options) *Handler {
	h := &Handler{store: o.Store, authorize: o.Authorized, log: o.Logger, now: o.Now}
	if h.authorize == nil {
		h.authorize = func(*fasthttp.RequestCtx) bool { return true }
	}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.events, _ = o.Store.(state.EventLog)
	h.approvals, _ = o.Store.(state.Approvals)
	h.pages = template.Must(template.New("console").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
	return h
}

// Serve answers one request under Prefix.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx) {
	securityHeaders(ctx)
	p := string(ctx.Path())
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Error("GET only", fasthttp.StatusMethodNotAllowed)
		return
	}
	rest := strings.TrimPrefix(p, Prefix)
	switch {
	case rest == "":
		ctx.Redirect(Prefix+"/", fasthttp.StatusFound)
	case rest == "/":
		h.render(ctx, "page_sessions", shellData{Title: "Sessions", Feed: "/shepherd/v1/events"})
	case strings.HasPrefix(rest, "/sessions/"):
		h.sessionShell(ctx, strings.TrimPrefix(rest, "/sessions/"))
	case strings.HasPrefix(rest, "/static/"):
		h.static(ctx, strings.TrimPrefix(rest, "/static/"))
	case strings.HasPrefix(rest, "/f/"):
		if !h.authorize(ctx) {
			ctx.Response.Header.Set("Cache-Control", "no-store")
			ctx.Error("admin token required", fasthttp.StatusUnauthorized)
			return
		}
		ctx.Response.Header.Set("Cache-Control", "no-store")
		h.fragment(ctx, strings.TrimPrefix(rest, "/f/"))
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

// fragment serves the data fragments (the caller checked the token).
func (h *Handler) fragment(ctx *fasthttp.RequestCtx, rest string) {
	switch {
	case rest == "sessions":
		h.sessionsFragment(ctx)
	case strings.HasPrefix(rest, "sessions/"):
		h.sessionFragment(ctx, strings.TrimPrefix(rest, "sessions/"))
	case rest == "approvals":
		h.approvalsFragment(ctx)
	case strings.HasPrefix(rest, "edits/"):
		h.editsRoute(ctx, strings.TrimPrefix(rest, "edits/"))
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

// static serves an embedded file of static/ (no directory listings).
func (h *Handler) static(ctx *fasthttp.RequestCtx, name string) {
	if name == "" || strings.Contains(name, "/") {
		ctx.Error("not found", fasthttp.StatusNotFound)
		return
	}
	b, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil {
		ctx.Error("not found", fasthttp.StatusNotFound)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	ctx.SetContentType(ctype)
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.SetBody(b)
}

// render executes the named template into the response as HTML.
func (h *Handler) render(ctx *fasthttp.RequestCtx, name string, data any) {
	var buf bytes.Buffer
	if err := h.pages.ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Warn("console: render", zap.String("template", name), zap.Error(err))
		ctx.Error("render failed", fasthttp.StatusInternalServerError)
		return
	}
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(buf.Bytes())
}

// securityHeaders forbid inline scripts, other origins and framing: a value
// an agent wrote can never run as code in the console.
func securityHeaders(ctx *fasthttp.RequestCtx) {
	hd := &ctx.Response.Header
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
		"img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
}
