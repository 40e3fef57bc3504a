package proxy_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// record is a stored event as the publisher writes it.
func record(tenant, session, typ string) string {
	return `{"type":"` + typ + `","at":"2026-11-25T22:00:00Z","session":"` + session + `","tenant":"` + tenant + `","data":{"n":1}}`
}

// seed appends one record per (tenant, session, type) and returns each
// record's frame in the global feed, in order.
func seed(t *testing.T, h *feedHarness, recs ...[3]string) []string {
	t.Helper()
	for _, r := range recs {
		require.NoError(t, h.log.AppendEvents(context.Background(), state.Key{Tenant: r[0], Session: r[1]}, [][]byte{[]byte(record(r[0], r[1], r[2]))}))
	}
	all, err := h.log.AllEvents(context.Background(), "", 100)
	require.NoError(t, err)
	require.Len(t, all, len(recs))
	var frames []string
	for i, rec := range all {
		r := recs[i]
		frames = append(frames, eventFrame(rec.ID, r[2], `{"id":"`+rec.ID+`",`+record(r[0], r[1], r[2])[1:]))
	}
	return frames
}

// sessionFrame is the frame of a session feed's record: its id in the
// session's log.
func sessionFrame(t *testing.T, h *feedHarness, key state.Key, i int, typ string) string {
	t.Helper()
	recs, err := h.log.SessionEvents(context.Background(), key, "", 100)
	require.NoError(t, err)
	id := recs[i].ID
	return eventFrame(id, typ, `{"id":"`+id+`",`+record(key.Tenant, key.Session, typ)[1:])
}

// Both feeds, byte by byte: SSE headers, one frame per kept event, oldest
// first, scoped by ?tenant= and by session; resume after Last-Event-ID or
// ?after=.
func TestEventFeedFramesAndResume(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testFeedFramesAndResume(t, nil) })
	t.Run("redis", func(t *testing.T) {
		url := kit.RedisURL(t)
		prefix := fmt.Sprintf("shepherd-feedframes-%d", time.Now().UnixNano())
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
		testFeedFramesAndResume(t, st)
	})
}

func testFeedFramesAndResume(t *testing.T, st state.Store) {
	h := newFeedHarness(t, feedOptions{Store: st})
	frames := seed(t, h,
		[3]string{"t1", "a", "request.started"},
		[3]string{"t2", "b", "request.started"},
		[3]string{"t1", "a", "request.finished"},
	)

	all := openFeed(t, h.URL+"/shepherd/v1/events", nil)
	require.Equal(t, 200, all.resp.StatusCode)
	require.Equal(t, "text/event-stream", all.resp.Header.Get("Content-Type"))
	require.Equal(t, "no", all.resp.Header.Get("X-Accel-Buffering"))
	require.Equal(t, "no-cache", all.resp.Header.Get("Cache-Control"))
	for _, want := range frames {
		require.Equal(t, want, all.frame(t, 2*time.Second))
	}

	t2 := openFeed(t, h.URL+"/shepherd/v1/events?tenant=t2", nil)
	require.Equal(t, frames[1], t2.frame(t, 2*time.Second), "tenant scoping")

	ka := state.Key{Tenant: "t1", Session: "a"}
	sa := openFeed(t, h.URL+"/shepherd/v1/sessions/a/events?tenant=t1", nil)
	require.Equal(t, sessionFrame(t, h, ka, 0, "request.started"), sa.frame(t, 2*time.Second))
	require.Equal(t, sessionFrame(t, h, ka, 1, "request.finished"), sa.frame(t, 2*time.Second))

	// Resume: Last-Event-ID, or ?after= for curl.
	first := strings.TrimPrefix(strings.SplitN(frames[0], "\n", 2)[0], "id: ")
	rs := openFeed(t, h.URL+"/shepherd/v1/events", map[string]string{"Last-Event-ID": first})
	require.Equal(t, frames[1], rs.frame(t, 2*time.Second))
	require.Equal(t, frames[2], rs.frame(t, 2*time.Second))
	ra := openFeed(t, h.URL+"/shepherd/v1/events?after="+first+"&tenant=t1", nil)
	require.Equal(t, frames[2], ra.frame(t, 2*time.Second))

	// Live: a new event reaches the open feeds.
	more := seedOne(t, h, "t2", "b", "chapter.opened")
	require.Equal(t, more, all.frame(t, 2*time.Second))
	require.Equal(t, more, t2.frame(t, 2*time.Second))
}

// seedOne appends one record and returns its global frame.
func seedOne(t *testing.T, h *feedHarness, tenant, session, typ string) string {
	t.Helper()
	require.NoError(t, h.log.AppendEvents(context.Background(), state.Key{Tenant: tenant, Session: session}, [][]byte{[]byte(record(tenant, session, typ))}))
	all, err := h.log.AllEvents(context.Background(), "", 1000)
	require.NoError(t, err)
	id := all[len(all)-1].ID
	return eventFrame(id, typ, `{"id":"`+id+`",`+record(tenant, session, typ)[1:])
}

// Errors are JSON, before any stream: 401 without the token, 400 for a
// malformed cursor, 404 for an unknown session without ?tenant= and for a
// feed that is off, 405 for other methods.
func TestEventFeedErrors(t *testing.T) {
	h := newFeedHarness(t, feedOptions{Config: func(c *config.Config) { c.Admin.Token = "adm1n" }})
	auth := map[string]string{"Authorization": "Bearer adm1n"}
	for _, path := range []string{"/shepherd/v1/events", "/shepherd/v1/sessions/a/events?tenant=t1"} {
		resp, body := do(t, "GET", h.URL+path, "", nil)
		require.Equal(t, 401, resp.StatusCode, path)
		require.JSONEq(t, `{"error":"admin token required"}`, string(body))
	}
	resp, body := do(t, "GET", h.URL+"/shepherd/v1/events", "", map[string]string{"Authorization": "Bearer adm1n", "Last-Event-ID": "12-x"})
	require.Equal(t, 400, resp.StatusCode, string(body))
	require.Contains(t, gjson.GetBytes(body, "error").String(), "Last-Event-ID")
	resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/unknown/events", "", auth)
	require.Equal(t, 404, resp.StatusCode, string(body))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	resp, _ = do(t, "POST", h.URL+"/shepherd/v1/events", "", auth)
	require.Equal(t, 405, resp.StatusCode)

	// A session the store knows is found without ?tenant=.
	_, err := h.store.Update(context.Background(), state.Key{Tenant: "t1", Session: "known"}, func(*state.Session) error { return nil })
	require.NoError(t, err)
	seedOne(t, h, "t1", "known", "request.started")
	s := openFeed(t, h.URL+"/shepherd/v1/sessions/known/events", auth)
	require.Equal(t, 200, s.resp.StatusCode)
	require.Contains(t, s.frame(t, 2*time.Second), "event: request.started\n")

	off := newFeedHarness(t, feedOptions{Config: func(c *config.Config) { c.Events.Enabled = false }})
	resp, body = do(t, "GET", off.URL+"/shepherd/v1/events", "", nil)
	require.Equal(t, 404, resp.StatusCode, string(body))
	require.Contains(t, gjson.GetBytes(body, "error").String(), "event feed is off")
}

// A silent feed sends a heartbeat comment; when the client leaves, the
// feed's goroutine ends (found at the next write at the latest).
func TestEventFeedHeartbeatAndDisconnect(t *testing.T) {
	h := newFeedHarness(t, feedOptions{Config: func(c *config.Config) { c.Events.Heartbeat = 100 * time.Millisecond }})
	s := openFeed(t, h.URL+"/shepherd/v1/events", nil)
	require.Equal(t, ": heartbeat\n\n", s.frame(t, 2*time.Second))
	require.Equal(t, ": heartbeat\n\n", s.frame(t, 2*time.Second))
	require.True(t, feedServing(), "the feed's goroutine runs while the client reads")
	require.Equal(t, 1.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_event_feeds_open"))

	s.close()
	require.Eventually(t, func() bool { return !feedServing() }, 3*time.Second, 20*time.Millisecond,
		"the feed's goroutine is gone after the client left")
	require.Equal(t, 0.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_event_feeds_open"))
}

// Shutdown ends open feeds rather than waiting on them.
func TestEventFeedEndsAtShutdown(t *testing.T) {
	h := newFeedHarness(t, feedOptions{})
	s := openFeed(t, h.URL+"/shepherd/v1/events", nil)
	require.Eventually(t, feedServing, 2*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, h.srv.Shutdown(ctx))
	require.Less(t, time.Since(start), 2*time.Second)
	t.Log("shutdown took", time.Since(start))
	require.Eventually(t, func() bool { return !feedServing() }, 2*time.Second, 10*time.Millisecond)
	t.Log("feed gone after", time.Since(start))
	_ = s
}

// feedServing reports whether some goroutine serves a feed.
func feedServing() bool {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Contains(string(buf[:n]), "proxy.(*feedSet).serve")
}

// The feed is served on a dedicated admin listener too.
func TestEventFeedOnAdminListener(t *testing.T) {
	h := newFeedHarness(t, feedOptions{Config: func(c *config.Config) { c.Admin.Token = "adm1n" }})
	ln := kit.Listen(t)
	go func() { _ = h.srv.ServeAdmin(ln) }()
	seedOne(t, h, "t1", "a", "request.started")
	s := openFeed(t, "http://"+ln.Addr().String()+"/shepherd/v1/sessions/a/events?tenant=t1", map[string]string{"Authorization": "Bearer adm1n"})
	require.Equal(t, sessionFrame(t, h, state.Key{Tenant: "t1", Session: "a"}, 0, "request.started"), s.frame(t, 2*time.Second))
}
