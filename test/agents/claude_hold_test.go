package agents

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// claudeEnv is Claude Code with extra environment variables.
type claudeEnv struct {
	claudeCode
	env []string
}

func (c claudeEnv) setup(t *testing.T, r *run) []string {
	return append(c.claudeCode.setup(t, r), c.env...)
}

// claudeByteIdleLimit is the shortest byte-idle limit Claude Code accepts
// (CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS is clamped to [10s, 30m]). When no
// byte arrives on a stream for that long, Claude Code abandons it and sends
// the request again, non-streamed (measured with intents.keepalive 30s: the
// retry arrives after 10s with "stream": false and is held again).
const claudeByteIdleLimit = 10 * time.Second

// A person takes longer to decide than Claude Code's byte-idle limit: the
// keepalive comments shepherd writes on the held stream keep Claude Code on
// that one stream (no abandon, no non-streamed retry), and the approved
// call then runs.
func TestClaudeFeedHoldOutlastsIdleLimit(t *testing.T) {
	d := claudeEnv{env: []string{sprintf("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS=%d", claudeByteIdleLimit.Milliseconds())}}
	requireCLI(t, d)
	s := newFeedStack(t, d, feedStackOptions{Policy: feedPolicy, ApprovalTimeout: feedHoldTimeout})
	const callID = "toolu_feedhold1"
	s.script(func(req mock.Recorded, main bool) mock.Reply {
		switch {
		case !main:
			return sideReply
		case strings.Contains(string(req.Body), "FEED-42"):
			return mock.Reply{Text: "HOLD-OUTLASTED-61"}
		}
		return mock.Reply{ToolCalls: []mock.ToolCall{{ID: callID, Name: "Bash", Args: bashArgs(`echo FEED-$((6*7))`)}}}
	})
	feed := followFeed(t, s.URL, "/shepherd/v1/events")
	run := startAgent(t, d, s, "Run the command, then say done.")
	held, hi := feed.waitFor(t, feedLive, 0, "call.held", ofType("call.held"))

	time.Sleep(claudeByteIdleLimit + time.Second)
	require.True(t, run.running(), "Claude Code still waits on the held stream")
	mains := s.mainRequests(d)
	require.Len(t, mains, 1, "Claude Code did not abandon the held stream and retry")
	decideApproval(t, s.URL, held.Data.Get("session").String(), held.Data.Get("data.approval").String(), "approve", "")
	feed.waitFor(t, feedLive, hi, "call.approved", ofType("call.approved"))

	res := run.wait()
	require.NoError(t, res.Err)
	require.Contains(t, res.Answer, "HOLD-OUTLASTED-61")
	mains = s.mainRequests(d)
	require.Len(t, mains, 2, "the held turn, then the turn with the command's output")
	for _, r := range mains {
		require.True(t, r.Stream, "every turn streamed: no non-streamed retry")
	}
	out, ok := toolResult(mains[1].Body, callID)
	require.True(t, ok)
	require.Contains(t, out, "FEED-42")
	require.Equal(t, 1, countType(feed.snapshot(), "call.held"), "held once")
}

func countType(evs []feedEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}
