package proxy

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/events/feed"
	"github.com/shepherd-proxy/shepherd/state"
)

// eventsPath is the feed of every session of the caller's view; a
// session's own feed is sessionsPrefix/{id}/events (docs/events.md).
const eventsPath = "/shepherd/v1/events"

// feedSet serves the SSE feeds of one server and ends them at Shutdown.
type feedSet struct {
	// follower reads the store's event log; nil when the feed is off
	// (events.enabled false, no publisher, or a store without EventLog).
	follower *feed.Follower
	stop     chan struct{}
	once     sync.Once
	open     prometheus.Gauge
}

// newFeedSet builds the server's feeds over store's event log, woken by em
// when it is a feed.Waker (the Publisher).
func newFeedSet(cfg *config.Config, store state.Store, em events.Emitter, m *Metrics) *feedSet {
	fs := &feedSet{stop: make(chan struct{}), open: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shepherd_event_feeds_open", Help: "Event feeds (SSE) open on the admin endpoints.",
	})}
	if m != nil {
		if err := m.Registry.Register(fs.open); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				fs.open = are.ExistingCollector.(prometheus.Gauge) // several servers share the metrics (tests)
			}
		}
	}
	el, ok := store.(state.EventLog)
	if _, nop := em.(events.Nop); !cfg.Events.Enabled || !ok || em == nil || nop {
		return fs
	}
	fs.follower = &feed.Follower{Log: el, Poll: cfg.Events.PollInterval, Heartbeat: cfg.Events.Heartbeat}
	if w, ok := em.(feed.Waker); ok {
		fs.follower.Wake = w
	}
	return fs
}

// close ends every open feed (Shutdown). It is idempotent.
func (fs *feedSet) close() { fs.once.Do(func() { close(fs.stop) }) }

// eventsRoute reports whether path is a feed: the global feed (session
// "") or sessionsPrefix/{id}/events.
func eventsRoute(path string) (session string, ok bool) {
	if path == eventsPath {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, sessionsPrefix+"/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/events")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// isEventsRoute reports whether path is a feed (serveEvents).
func isEventsRoute(path string) bool {
	_, ok := eventsRoute(path)
	return ok
}

// serveEvents serves a feed as Server-Sent Events:
//
//	GET /shepherd/v1/events[?tenant=T]: every session's events (one
//	tenant's with ?tenant=);
//	GET /shepherd/v1/sessions/{id}/events[?tenant=T]: one session's (the
//	tenant is looked up as for GET /shepherd/v1/sessions/{id} when absent).
//
// The events kept after the cursor (header Last-Event-ID, or ?after=;
// none: every event kept) come first, after the comment line ": open",
// then each new one. Each is one frame
// "id: <id>\nevent: <type>\ndata: <event JSON>\n\n"; a comment line
// ": heartbeat" follows every events.heartbeat without one. The feed ends
// when the client leaves or the server shuts down. Authorization as for
// the sessions API; errors are JSON, before the stream starts.
func (s *Server) serveEvents(ctx *fasthttp.RequestCtx, path string) {
	session, _ := eventsRoute(path)
	if !s.adminAuthorized(ctx) {
		writeJSON(ctx, fasthttp.StatusUnauthorized, map[string]string{"error": "admin token required"})
		return
	}
	if !ctx.IsGet() {
		writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
		return
	}
	fl := s.feeds.follower
	if fl == nil {
		writeJSON(ctx, fasthttp.StatusNotFound, map[string]string{"error": "the event feed is off (events.enabled, or a state store without an event log)"})
		return
	}
	after := string(ctx.Request.Header.Peek("Last-Event-ID"))
	if after == "" {
		after = string(ctx.QueryArgs().Peek("after"))
	}
	if !validEventID(after) {
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "Last-Event-ID (or after) is not an event id <ms>-<seq>"})
		return
	}
	q := feed.Query{Tenant: string(ctx.QueryArgs().Peek("tenant")), Session: session, After: after}
	if session != "" && q.Tenant == "" {
		var ok bool
		if q.Tenant, ok = s.sessionTenant(ctx, session, "session not found; add ?tenant= to follow a session not saved yet"); !ok {
			return
		}
	}
	if session != "" && !(state.Key{Tenant: q.Tenant, Session: session}).Valid() {
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "invalid tenant or session id"})
		return
	}
	// The first page is read before the answer starts, so a store that is
	// down is answered with a status rather than an empty stream.
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	first, next, _, err := fl.Page(c, q)
	cancel()
	if errors.Is(err, state.ErrInvalidEventID) || errors.Is(err, state.ErrInvalidKey) {
		writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "invalid cursor, tenant or session id"})
		return
	}
	if err != nil {
		s.metrics.StoreError("events")
		writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": "state store unavailable"})
		return
	}
	q.After = next
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) { s.feeds.serve(w, q, first) })
}

// serve writes first, then follows q until the client leaves (a write
// fails) or the server shuts down.
func (fs *feedSet) serve(w *bufio.Writer, q feed.Query, first []feed.Item) {
	fs.open.Inc()
	defer fs.open.Dec()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-fs.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// The comment makes the headers go out at once, even with nothing to
	// replay.
	_, _ = w.WriteString(": open\n\n")
	for _, it := range first {
		writeFrame(w, it)
	}
	if w.Flush() != nil {
		return
	}
	_ = fs.follower.Follow(ctx, q,
		func(it feed.Item) error { writeFrame(w, it); return w.Flush() },
		func() error { _, _ = w.WriteString(": heartbeat\n\n"); return w.Flush() })
}

// writeFrame writes one SSE frame; the JSON holds no line break.
func writeFrame(w *bufio.Writer, it feed.Item) {
	_, _ = w.WriteString("id: ")
	_, _ = w.WriteString(it.ID)
	_, _ = w.WriteString("\nevent: ")
	_, _ = w.WriteString(it.Type)
	_, _ = w.WriteString("\ndata: ")
	_, _ = w.Write(it.JSON)
	_, _ = w.WriteString("\n\n")
}

// validEventID reports whether id is "" or "<ms>-<seq>" (digits), as the
// event logs assign them; a client's Last-Event-ID is untrusted.
func validEventID(id string) bool {
	if id == "" {
		return true
	}
	a, b, ok := strings.Cut(id, "-")
	return ok && len(id) <= 41 && digits(a) && digits(b)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
