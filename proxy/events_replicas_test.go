package proxy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Two replicas on one Redis: a request served by replica A appears on
// replica B's feed within about a second (B's own publisher never saw it:
// B finds it by polling the shared log).
func TestEventFeedAcrossReplicas(t *testing.T) {
	url := kit.RedisURL(t)
	prefix := fmt.Sprintf("shepherd-feedtest-%d", time.Now().UnixNano())
	open := func() state.Store {
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		require.NoError(t, err)
		if _, ok := any(st).(state.EventLog); !ok {
			_ = st.Close()
			t.Skip("the Redis store keeps no event log yet")
		}
		return st
	}
	a := newFeedHarness(t, feedOptions{Store: open()})
	// B polls at the default interval: A's events reach B only that way.
	b := newFeedHarness(t, feedOptions{Store: open(), Config: func(c *config.Config) { c.Events.PollInterval = 500 * time.Millisecond }})
	t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })

	feedB := openFeed(t, b.URL+"/shepherd/v1/events", nil)
	hdr := anthropicHeaders()
	hdr["X-Session-Id"] = "replicas-1"
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	start := time.Now()
	resp, _ := do(t, "POST", a.URL+"/v1/messages", body, hdr)
	require.Equal(t, 200, resp.StatusCode)
	served := time.Since(start)

	evs := untilFinished(t, feedB, "replicas-1")
	seen := time.Since(start) - served
	require.Equal(t, []string{"request.started", "request.finished"}, types(evs))
	require.Less(t, seen, 1500*time.Millisecond, "replica B shows A's request within about a second")
	t.Logf("replica B showed A's request.finished %v after A answered", seen)

	// B's session feed too, resolved through the shared store.
	own := openFeed(t, b.URL+"/shepherd/v1/sessions/replicas-1/events?tenant="+evs[0].data.Get("tenant").String(), nil)
	require.Equal(t, types(evs), types(untilFinished(t, own, "replicas-1")))
}
