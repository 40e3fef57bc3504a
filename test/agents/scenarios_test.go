package agents

import (
	"testing"

	"github.com/stretchr/testify/require"

	"shepherd/bench/mock"
)

// drivers are the CLIs under test, in the order they are run.
func drivers() []driver { return []driver{claudeCode{}, codexCLI{}} }

// forEach runs body as a subtest per installed driver.
func forEach(t *testing.T, body func(t *testing.T, d driver)) {
	for _, d := range drivers() {
		t.Run(d.name(), func(t *testing.T) {
			requireCLI(t, d)
			body(t, d)
		})
	}
}

// sideReply answers the agents' side requests (titles, summaries, checks).
var sideReply = mock.Reply{Text: "ok"}

// (a) A plain turn reaches the provider through shepherd and the agent
// prints the model's answer.
func TestAgentPlainTurn(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		s := newStack(t, d, stackOptions{})
		s.script(func(req mock.Recorded, main bool) mock.Reply {
			if !main {
				return sideReply
			}
			return mock.Reply{Text: "PONG-7f3a"}
		})
		res := mustRun(t, d, s, "Reply with the word pong.")
		require.Contains(t, res.Answer, "PONG-7f3a")
		mains := s.mainRequests(d)
		require.NotEmpty(t, mains, "no agent turn reached the provider")
		require.Contains(t, string(mains[0].Body), "Reply with the word pong.")
	})
}
