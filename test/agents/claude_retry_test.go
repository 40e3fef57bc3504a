package agents

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// KNOWN BUG (run with SHEPHERD_AGENTS_KNOWN_BUGS=1; fails on main): an
// agent that abandons a held request and sends it again loses the call to
// a denial no person made.
//
// Claude Code abandons a stream that carries no byte for its byte-idle limit
// (here 10s; intents.keepalive 12s lets the limit pass) and sends the same
// request again, non-streamed. The retry's call has the same approval id
// (a hash of session, call id, tool and arguments), so shepherd holds it
// under the same pending approval. At its next keepalive the original hold
// finds its client gone and denies that shared approval "by shepherd";
// the retry, whose client is still connected, reads the denial and tells
// the model "Tool call refused: denied by a person. Their note: the agent's
// connection closed while the call was held". The person's approval a
// moment later gets 409. Measured on main (561fcec): exactly that.
//
// Expected: the agent's leaving ends only its own wait; the approval stays
// pending for the retry, the person approves it, and Claude Code runs the
// command.
func TestClaudeFeedRetriedHoldKnownBug(t *testing.T) {
	if os.Getenv("SHEPHERD_AGENTS_KNOWN_BUGS") != "1" {
		t.Skip("known bug: SHEPHERD_AGENTS_KNOWN_BUGS=1 runs it")
	}
	d := claudeEnv{env: []string{sprintf("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS=%d", claudeByteIdleLimit.Milliseconds())}}
	requireCLI(t, d)
	s := newFeedStack(t, d, feedStackOptions{Policy: feedPolicy, ApprovalTimeout: time.Minute,
		KeepAlive: claudeByteIdleLimit + 2*time.Second})
	s.script(func(req mock.Recorded, main bool) mock.Reply {
		switch {
		case !main:
			return sideReply
		case strings.Contains(string(req.Body), "FEED-42"):
			return mock.Reply{Text: "RAN-AFTER-APPROVAL"}
		case strings.Contains(string(req.Body), "Tool call refused"):
			return mock.Reply{Text: "GOT-REFUSAL"}
		}
		return mock.Reply{ToolCalls: []mock.ToolCall{{ID: "toolu_retry1", Name: "Bash", Args: bashArgs(`echo FEED-$((6*7))`)}}}
	})
	feed := followFeed(t, s.URL, "/shepherd/v1/events")
	run := startAgent(t, d, s, "Run the command, then say done.")
	held, hi := feed.waitFor(t, feedLive, 0, "call.held", ofType("call.held"))
	// The retry arrives and is held again under the same approval.
	retried, _ := feed.waitFor(t, feedLive, hi+1, "the retry's call.held", ofType("call.held"))
	require.Equal(t, held.Data.Get("data.approval").String(), retried.Data.Get("data.approval").String())
	// Past the original's next keepalive, where it finds its client gone.
	time.Sleep(time.Until(held.Received.Add(claudeByteIdleLimit + 4*time.Second)))

	answer := tryDecide(t, s.URL, held.Data.Get("session").String(), held.Data.Get("data.approval").String(), "approve")
	res := run.wait()
	t.Logf("approve: %s\nfeed:\n%s", answer, listEvents(feed.snapshot()))
	require.True(t, strings.HasPrefix(answer, sprintf("%d ", http.StatusOK)), "the person can still approve the retried call: %s", answer)
	require.NoError(t, res.Err)
	require.Contains(t, res.Answer, "RAN-AFTER-APPROVAL", "Claude Code ran the approved command")
}
