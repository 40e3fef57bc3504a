package proxy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// feedEvent is one frame of a feed, read back.
type feedEvent struct {
	id, typ string
	data    gjson.Result // the event JSON
}

func parseFrame(t *testing.T, f string) feedEvent {
	t.Helper()
	var ev feedEvent
	for _, line := range strings.Split(strings.TrimSuffix(f, "\n\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = gjson.Parse(strings.TrimPrefix(line, "data: "))
		}
	}
	return ev
}

// untilFinished reads a feed's events up to the request.finished of
// session, skipping heartbeats and other sessions' events.
func untilFinished(t *testing.T, s *sseStream, session string) []feedEvent {
	t.Helper()
	var out []feedEvent
	for {
		f := s.frame(t, 5*time.Second)
		if strings.HasPrefix(f, ":") {
			continue
		}
		ev := parseFrame(t, f)
		if ev.data.Get("session").String() != session {
			continue
		}
		out = append(out, ev)
		if ev.typ == "request.finished" {
			return out
		}
	}
}

func types(evs []feedEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.typ)
	}
	return out
}

// A topics session through a real proxy and the mock provider, JSON and
// streamed: the feed shows the request starting, the chapter it opened,
// each call's fate (claimed by topics, refused by topics for a missing
// title, allowed to the agent) and the request finishing with its usage,
// in that order.
func TestEventFeedTopicsSessionEndToEnd(t *testing.T) {
	d, _ := kit.Lookup("anthropic")
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			h := newFeedHarness(t, feedOptions{Config: func(c *config.Config) { c.Topics.Enabled = true }})
			session := "feed-e2e-" + name
			hdr := map[string]string{"X-Session-Id": session}
			for k, v := range d.Headers() {
				hdr[k] = v
			}
			h.mock.Script(mock.Reply{ID: "r1", Usage: mock.Usage{Input: 40, Output: 31}, ToolCalls: []mock.ToolCall{
				{ID: "t1", Name: "create_new_topic", Args: `{"title":"Research"}`},
				{ID: "t2", Name: "create_new_topic", Args: `{}`},
				{ID: "c1", Name: "Read", Args: `{"path":"main.go"}`},
			}})
			feed := openFeed(t, h.URL+"/shepherd/v1/events", nil)

			body := d.Request(kit.Request{System: "You are terse.", Tools: []kit.Tool{kit.ReadTool},
				History: []string{d.User("fix the bug")}, Stream: stream})
			resp, reply := do(t, "POST", h.URL+d.Path("", stream), body, hdr)
			require.Equal(t, 200, resp.StatusCode, string(reply))

			evs := untilFinished(t, feed, session)
			require.Equal(t, []string{"request.started", "chapter.opened", "call.claimed", "call.refused", "call.allowed", "request.finished"}, types(evs))
			for _, e := range evs {
				require.Equal(t, e.id, e.data.Get("id").String(), "the data carries the SSE id")
				require.NotEmpty(t, e.data.Get("tenant").String())
				require.NotEmpty(t, e.data.Get("request_id").String())
				require.Equal(t, evs[0].data.Get("request_id").String(), e.data.Get("request_id").String())
			}
			require.Equal(t, stream, evs[0].data.Get("data.stream").Bool())
			require.Equal(t, "claude-test", evs[0].data.Get("data.model").String())
			require.Equal(t, "Research", evs[1].data.Get("data.title").String())
			require.Equal(t, "", evs[1].data.Get("data.previous").String())
			require.Equal(t, "create_new_topic", evs[2].data.Get("data.tool").String())
			require.Equal(t, "t1", evs[2].data.Get("data.call_id").String())
			require.Equal(t, "topics", evs[2].data.Get("data.hook").String())
			require.Equal(t, "topics", evs[3].data.Get("data.hook").String())
			require.Contains(t, evs[3].data.Get("data.reason").String(), `needs a non-empty "title"`)
			require.Equal(t, "Read", evs[4].data.Get("data.tool").String())
			require.Equal(t, "c1", evs[4].data.Get("data.call_id").String())
			fin := evs[5].data.Get("data")
			require.Equal(t, int64(200), fin.Get("status").Int(), fin.Raw)
			require.Equal(t, "tool_use", fin.Get("stop").String(), fin.Raw)
			require.Equal(t, int64(1), fin.Get("rounds").Int(), fin.Raw)
			require.Equal(t, int64(40), fin.Get("usage.input_tokens").Int(), fin.Raw)
			require.Equal(t, int64(31), fin.Get("usage.output_tokens").Int(), fin.Raw)
			require.False(t, fin.Get("error").Exists(), fin.Raw)
			require.False(t, fin.Get("cost_usd").Exists(), "a model without a price has no cost: "+fin.Raw)
			require.True(t, fin.Get("duration_ms").Exists(), fin.Raw)

			// The session's own feed holds the same events.
			tenant := evs[0].data.Get("tenant").String()
			own := openFeed(t, h.URL+"/shepherd/v1/sessions/"+session+"/events?tenant="+tenant, nil)
			require.Equal(t, types(evs), types(untilFinished(t, own, session)))
		})
	}
}

// A reply cut twice by the output limit and continued: one continuation
// event per attempt, and request.finished with the rounds, the
// continuations and the usage summed over them.
func TestEventFeedContinuations(t *testing.T) {
	d, _ := kit.Lookup("anthropic")
	h := newFeedHarness(t, feedOptions{Config: func(c *config.Config) { c.Recovery.Enabled = true }})
	h.mock.Script(
		mock.Reply{ID: "r1", Text: "One, ", Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 10}},
		mock.Reply{ID: "r2", Text: "two, ", Stop: "max_tokens", Usage: mock.Usage{Input: 130, Output: 5}},
		mock.Reply{ID: "r3", Text: "three.", Usage: mock.Usage{Input: 160, Output: 7}},
	)
	feed := openFeed(t, h.URL+"/shepherd/v1/events", nil)
	hdr := map[string]string{"X-Session-Id": "feed-cont"}
	for k, v := range d.Headers() {
		hdr[k] = v
	}
	body := d.Request(kit.Request{Model: "claude-sonnet-4-5", History: []string{d.User("Count to three.")}})
	resp, reply := do(t, "POST", h.URL+d.Path("", false), body, hdr)
	require.Equal(t, 200, resp.StatusCode, string(reply))

	evs := untilFinished(t, feed, "feed-cont")
	require.Equal(t, []string{"request.started", "continuation", "continuation", "request.finished"}, types(evs))
	require.Equal(t, int64(1), evs[1].data.Get("data.attempt").Int())
	require.Equal(t, int64(2), evs[2].data.Get("data.attempt").Int())
	require.Equal(t, "max_tokens", evs[2].data.Get("data.stop").String())
	fin := evs[3].data.Get("data")
	require.Equal(t, int64(3), fin.Get("rounds").Int(), fin.Raw)
	require.Equal(t, int64(2), fin.Get("continuations").Int(), fin.Raw)
	require.Equal(t, int64(390), fin.Get("usage.input_tokens").Int(), fin.Raw)
	require.Equal(t, int64(22), fin.Get("usage.output_tokens").Int(), fin.Raw)
	require.Equal(t, "end", fin.Get("stop").String(), fin.Raw)
	// 390 input and 22 output tokens at $3 and $15 per million.
	require.InDelta(t, 390*3e-6+22*15e-6, fin.Get("cost_usd").Float(), 1e-12, fin.Raw)
}
