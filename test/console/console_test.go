// Package console_test drives the console in a real headless Chromium
// (chromedp) against real proxies in front of the scripted mock provider,
// and asserts what a person sees.
package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// TestConsoleTokenChapterRefusal: the console asks for the token before it
// shows any data, loads the sessions after it is given (without the token
// ever being in a URL), and the session page shows the chapter the model
// opened and the call shepherd refused, with the reason the model was
// given.
func TestConsoleTokenChapterRefusal(t *testing.T) {
	s := startShepherd(t, shepherdOptions{})
	s.Mock.Script(
		mock.Reply{ToolCalls: []mock.ToolCall{
			{ID: "t1", Name: "create_new_topic", Args: `{"title":"Harden the login form"}`},
			{ID: "b1", Name: "Bash", Args: `{"command":"rm -rf build"}`},
		}},
		mock.Reply{Text: "Bash is off limits; reading instead."},
	)
	a := s.agent(t, "console-1")
	a.User("fix the login bug")
	reply, _, _ := a.Send(t)
	require.Equal(t, "Bash is off limits; reading instead.", reply.Text)
	audit := gjson.GetBytes(s.api(t, "/shepherd/v1/sessions/console-1"), `audit.#(decision=="refused")`)
	require.True(t, audit.Exists(), "the Bash call was refused")
	reason := audit.Get("reason").String()
	require.NotEmpty(t, reason)

	ctx := newTab(t, 40*time.Second)
	reqs := watchRequests(t, ctx)
	run(t, ctx, "open the console", chromedp.Navigate(s.Admin+"/console/"))

	// No token yet: the form, and no data.
	run(t, ctx, "the token form", chromedp.WaitVisible(chromedp.CSS("#token-form")))
	sessions, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#sessions")))
	require.NoError(t, err)
	require.NotContains(t, sessions, "console-1", "no data before the token is given")

	// A wrong token is refused and asked again.
	giveToken(t, ctx, "wrong-token")
	waitText(t, ctx, "#token-error", "refused")

	giveToken(t, ctx, adminToken)
	list := waitText(t, ctx, "#sessions", "console-1")
	require.Contains(t, list, "INT-001", "the session's intent is listed")
	row := waitText(t, ctx, `tr[data-session="console-1"]`, "claude-code", "claude-sonnet-4-5")
	require.Regexp(t, `\$0\.\d*[1-9]`, row, "the session's cost is listed")

	// Search: a word that matches nothing empties the list; the agent's
	// name finds the session again.
	run(t, ctx, "search", chromedp.SendKeys(chromedp.CSS("#q"), "no-such-session"))
	waitText(t, ctx, "#sessions", "No session matches")
	eval[string](t, ctx, `document.getElementById("q").value = ""`)
	run(t, ctx, "search by agent", chromedp.SendKeys(chromedp.CSS("#q"), "claude-code"))
	waitText(t, ctx, "#sessions", "console-1")
	run(t, ctx, "the token form is gone", chromedp.WaitNotVisible(chromedp.CSS("#token-form")))

	// The session's own page, by its link: the chapter and the refusal.
	run(t, ctx, "open the session", chromedp.Click(chromedp.CSS(`tr[data-session="console-1"] a`)))
	page := waitText(t, ctx, "#session", "Harden the login form", reason)
	require.Contains(t, page, "refused")
	require.Contains(t, page, "Bash")
	require.True(t, strings.HasSuffix(location(t, ctx), "/console/sessions/console-1?tenant="+gjson.GetBytes(s.api(t, "/shepherd/v1/sessions/console-1"), "tenant").String()))
	screenshot(t, ctx, "session-chapter-refusal")

	// The token went as a header only: not in any URL the page requested
	// or showed, and the fragments were requested.
	urls := reqs.urls()
	requireNoToken(t, append(urls, location(t, ctx)), adminToken)
	var fragments int
	for _, u := range urls {
		if strings.Contains(u, "/console/f/") {
			fragments++
		}
	}
	require.Positive(t, fragments, "the page loaded its fragments: %v", urls)

	// On a phone that prefers dark colours: dark, and the sessions table
	// becomes one card per session. The token is still in the tab.
	run(t, ctx, "a dark phone", darkPhone(), chromedp.Navigate(s.Admin+"/console/"))
	waitText(t, ctx, "#sessions", "console-1")
	require.Equal(t, "rgb(17, 19, 21)", eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`))
	require.Equal(t, "none", eval[string](t, ctx, `getComputedStyle(document.querySelector("table.sessions thead")).display`))
	require.LessOrEqual(t, eval[float64](t, ctx, `document.documentElement.scrollWidth`), 390.0, "nothing wider than the phone")
	screenshot(t, ctx, "sessions-phone-dark")
}
