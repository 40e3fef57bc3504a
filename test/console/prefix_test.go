package console_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// TestConsoleCacheIntegrity: after two turns that extend each other, the
// session page's cache-integrity pane shows the first turn and an intact
// prefix with its cache tokens, and the timeline's turn says so too.
func TestConsoleCacheIntegrity(t *testing.T) {
	s := startShepherd(t, shepherdOptions{})
	a := s.agent(t, "console-prefix")
	s.Mock.Script(mock.Reply{Text: "first answer", Usage: mock.Usage{Input: 100, Output: 10, CacheWrite: 900}})
	a.User("hello")
	a.Send(t)
	s.Mock.Script(mock.Reply{Text: "second answer", Usage: mock.Usage{Input: 20, Output: 10, CacheRead: 900, CacheWrite: 40}})
	a.User("and then?")
	a.Send(t)

	ctx := newTab(t, 40*time.Second)
	run(t, ctx, "open the session", chromedp.Navigate(s.Admin+"/console/sessions/console-prefix"))
	giveToken(t, ctx, adminToken)
	pane := waitText(t, ctx, "#session .cache-integrity", "Cache integrity", "prefix intact", "first turn of this conversation")
	require.Contains(t, pane, "900 / 40", "the second turn's cache read / write")
	require.NotContains(t, pane, "broken")
	waitText(t, ctx, "#session .timeline", "prefix intact")
	elementShot(t, ctx, "#session .cache-integrity", "session-cache-integrity")
}
