package console_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// firstTurn scripts and sends a session's first turn: the model selects
// the intent INT-001, opens the chapter "Harden the login form" and runs
// Bash, which the policy refuses; told so, it reads a file.
func firstTurn(t *testing.T, s *shepherd, a *kit.Agent) {
	t.Helper()
	s.Mock.Script(
		mock.Reply{ToolCalls: []mock.ToolCall{
			{ID: "s1", Name: "select_active_intent", Args: `{"intent_id":"INT-001"}`},
			{ID: "t1", Name: "create_new_topic", Args: `{"title":"Harden the login form"}`},
			{ID: "b1", Name: "Bash", Args: `{"command":"rm -rf build"}`},
		}, Usage: mock.Usage{Input: 100, Output: 20, CacheRead: 300, CacheWrite: 100}},
		mock.Reply{Text: "Bash is off limits; reading instead.", ToolCalls: []mock.ToolCall{{ID: "r1", Name: "Read", Args: `{"path":"src/login.go"}`}},
			Usage: mock.Usage{Input: 50, Output: 10, CacheRead: 450}},
	)
	a.User("fix the login bug")
	a.Send(t)
}

// secondTurn: the agent returns the Read's result; the model opens the
// chapter title, its next reply is cut by the output limit and continued,
// and it reads again.
func secondTurn(t *testing.T, s *shepherd, a *kit.Agent, title string) {
	t.Helper()
	s.Mock.Script(
		mock.Reply{ToolCalls: []mock.ToolCall{{ID: "t2", Name: "create_new_topic", Args: fmt.Sprintf(`{"title":%q}`, title)}}},
		mock.Reply{Text: "Reading the existing tests before writing", Stop: "max_tokens"},
		mock.Reply{Text: " the new one.", ToolCalls: []mock.ToolCall{{ID: "r2", Name: "Read", Args: `{"path":"tests/login_test.go"}`}}},
	)
	a.ToolResult("r1", "Read", "package login")
	a.Send(t)
}

// TestConsoleLive: the session page shows the chapter, the refusal and
// each turn's tokens and cache-hit ratio, and a new chapter appears while
// the page is open, without a reload.
func TestConsoleLive(t *testing.T) {
	s := startShepherd(t, shepherdOptions{})
	a := s.agent(t, "console-live")
	firstTurn(t, s, a)

	ctx := newTab(t, 40*time.Second)
	run(t, ctx, "open the session", chromedp.Navigate(s.Admin+"/console/sessions/console-live"))
	giveToken(t, ctx, adminToken)
	page := waitText(t, ctx, "#session", "Harden the login form", `disallows the tool "Bash"`, "cache hit 75%", "Fix the login bug", "empty passwords are rejected")
	require.Contains(t, page, "refused")
	waitLive(t, ctx)
	eval[bool](t, ctx, `window.notReloaded = true`)

	secondTurn(t, s, a, "Write the regression test")
	page = waitText(t, ctx, "#session", "Write the regression test")
	require.Contains(t, page, "continued", "the continuation is marked")
	require.True(t, eval[bool](t, ctx, `window.notReloaded === true`), "the page was not reloaded")
	screenshot(t, ctx, "session-live")

	// The model asks for a Deploy: the call waits on the session's page,
	// above its timeline, until it is approved there.
	s.Mock.Script(mock.Reply{Text: "Tests pass; deploying.", ToolCalls: []mock.ToolCall{{ID: "d1", Name: "Deploy", Args: deployArgs}}})
	a.ToolResult("r2", "Read", "package login_test")
	turn := sendAsync(a)
	waitText(t, ctx, `#approvals li[data-approval]`, "Deploy", `ask_tools entry "Deploy"`)
	run(t, ctx, "a taller window, at the top", chromedp.EmulateViewport(1200, 1120), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	viewShot(t, ctx, "console") // the README's picture (docs/img/console.png)
	run(t, ctx, "approve", chromedp.Click(chromedp.CSS(`#approvals li[data-approval] button.approve`)))
	reply := wait(t, turn, 20*time.Second)
	require.Len(t, reply.Calls, 1)
	require.Equal(t, "Deploy", reply.Calls[0].Name)
	waitText(t, ctx, "#session", "approved", "by console")
	require.True(t, eval[bool](t, ctx, `window.notReloaded === true`), "the page was not reloaded")
}

// TestConsoleTwoReplicas: two proxies on one Redis; the console on A shows,
// live, a session served by B.
func TestConsoleTwoReplicas(t *testing.T) {
	url := kit.RedisURL(t)
	prefix := fmt.Sprintf("shepherd-console-%d", time.Now().UnixNano())
	t.Cleanup(func() { cleanupRedis(t, url, prefix) })
	open := func() state.Store {
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		require.NoError(t, err)
		return st
	}
	a := startShepherd(t, shepherdOptions{Store: open()})
	b := startShepherd(t, shepherdOptions{Store: open(), Mock: a.Mock})

	ctx := newTab(t, 40*time.Second)
	run(t, ctx, "open the console on A", chromedp.Navigate(a.Admin+"/console/"))
	giveToken(t, ctx, adminToken)
	waitLive(t, ctx)

	agent := b.agent(t, "console-replicas")
	firstTurn(t, b, agent)
	waitText(t, ctx, "#sessions", "console-replicas", "Harden the login form")

	run(t, ctx, "open the session on A", chromedp.Click(chromedp.CSS(`tr[data-session="console-replicas"] a`)))
	waitText(t, ctx, "#session", "Harden the login form", `disallows the tool "Bash"`)
	waitLive(t, ctx)
	secondTurn(t, b, agent, "Served by replica B")
	waitText(t, ctx, "#session", "Served by replica B")
	screenshot(t, ctx, "replica-a-shows-b")
}

// cleanupRedis deletes the keys under prefix.
func cleanupRedis(t *testing.T, url, prefix string) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Errorf("REDIS_URL: %v", err)
		return
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
}
