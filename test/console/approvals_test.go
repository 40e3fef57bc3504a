package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

const deployArgs = `{"target":"staging","reason":"<b>ship it</b>"}`

// heldDeploy starts a proxy whose model asks for a Deploy (held by the
// policy's ask rule), then replies then, and sends the agent's turn, which
// waits on a person; it returns the proxy and the agent's pending turn.
// The tests open their tab first: without a browser they skip before a
// call is held (a held call keeps the proxy's shutdown waiting for it).
func heldDeploy(t *testing.T, session string, then ...mock.Reply) (*shepherd, <-chan turnResult) {
	s := startShepherd(t, shepherdOptions{})
	s.Mock.Script(append([]mock.Reply{{Text: "Deploying.", ToolCalls: []mock.ToolCall{{ID: "d1", Name: "Deploy", Args: deployArgs}}}}, then...)...)
	a := s.agent(t, session)
	a.User("deploy it")
	return s, sendAsync(a)
}

// TestConsoleApprove: a held call shows on the console with its tool,
// arguments (escaped), intent, reason and time left; Approve sends it to
// the agent.
func TestConsoleApprove(t *testing.T) {
	ctx := newTab(t, 40*time.Second)
	s, turn := heldDeploy(t, "console-approve")
	run(t, ctx, "open the console", chromedp.Navigate(s.Admin+"/console/"))
	giveToken(t, ctx, adminToken)

	card := waitText(t, ctx, `#approvals li[data-approval]`, "Deploy", "INT-001", `ask_tools entry "Deploy"`, `<b>ship it</b>`)
	require.Regexp(t, `\d+s left`, card, "the time left is counted down")
	screenshot(t, ctx, "approval-pending")
	run(t, ctx, "approve", chromedp.Click(chromedp.CSS(`#approvals li[data-approval] button.approve`)))

	reply := wait(t, turn, 20*time.Second)
	require.Len(t, reply.Calls, 1, "the agent receives the approved call")
	require.Equal(t, "Deploy", reply.Calls[0].Name)
	require.JSONEq(t, deployArgs, reply.Calls[0].Args)
	require.Len(t, s.Mock.Requests(), 1, "an approved call goes to the agent: no follow-up")
	waitText(t, ctx, "#approvals", "No call is waiting for approval")
}

// TestConsoleDeny: Deny (with a note typed beside the button) keeps the
// call from the agent; the model receives the refusal with the note.
func TestConsoleDeny(t *testing.T) {
	ctx := newTab(t, 40*time.Second)
	s, turn := heldDeploy(t, "console-deny", mock.Reply{Text: "Understood, not deploying."})
	run(t, ctx, "open the session", chromedp.Navigate(s.Admin+"/console/sessions/console-deny"))
	giveToken(t, ctx, adminToken)

	waitText(t, ctx, `#approvals li[data-approval]`, "Deploy")
	run(t, ctx, "deny with a note",
		chromedp.SendKeys(chromedp.CSS(`#approvals li[data-approval] input.note`), "not on a Friday"),
		chromedp.Click(chromedp.CSS(`#approvals li[data-approval] button.deny`)))

	reply := wait(t, turn, 20*time.Second)
	require.Empty(t, reply.Calls, "the agent never sees a denied call")
	require.Contains(t, reply.Text, "Understood, not deploying.")
	reqs := s.Mock.Requests()
	require.Len(t, reqs, 2, "the refusal goes back to the model")
	follow := string(reqs[1].Body)
	require.Contains(t, follow, "not on a Friday", "the model receives the person's note")
	require.True(t, strings.Contains(follow, `"tool_use_id":"d1"`), "the refusal answers the held call")
	run(t, ctx, "the card is gone", chromedp.WaitNotPresent(chromedp.CSS(`#approvals li[data-approval]`)))
}
