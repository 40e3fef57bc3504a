package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// drivers are the CLIs under test, in the order they are run.
func drivers() []driver {
	return []driver{claudeCode{}, codexCLI{}, geminiCLI{}, clineCLI{}, clineAnthropic{}}
}

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
		for _, r := range s.mock.Requests() {
			t.Logf("%s %s tools=%v", r.Method, r.Path, toolNames(r.Body))
		}
		require.Contains(t, res.Answer, "PONG-7f3a")
		mains := s.mainRequests(d)
		require.NotEmpty(t, mains, "no agent turn reached the provider")
		require.Contains(t, string(mains[0].Body), "Reply with the word pong.")
		// Codex asks for a WebSocket first; shepherd's 426 must send it to
		// HTTP at once, not through five "Reconnecting..." retries (what any
		// other status, e.g. a passed-through 404, causes).
		require.NotContains(t, string(res.Stdout), "Reconnecting")
		require.NotContains(t, string(res.Stdout), "Falling back from WebSockets")
	})
}

// (b) Topics on: the model opens a chapter with the topic tool; shepherd
// answers the call itself and sends the follow-up upstream, so the agent
// only sees the answer after it and never runs (or reports) the tool.
func TestAgentTopicChapter(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		s := newStack(t, d, stackOptions{Topics: true})
		s.script(func(req mock.Recorded, main bool) mock.Reply {
			switch {
			case !main:
				return sideReply
			case strings.Contains(string(req.Body), "Topic changed to"):
				return mock.Reply{Text: "TOPIC-DONE-41"}
			}
			return mock.Reply{ToolCalls: []mock.ToolCall{{Name: "create_new_topic", Args: `{"title":"Agents suite"}`}}}
		})
		res := mustRun(t, d, s, "Start a chapter, then say done.")
		require.Contains(t, res.Answer, "TOPIC-DONE-41")
		mains := s.mainRequests(d)
		require.Len(t, mains, 2, "the agent's turn plus shepherd's follow-up, nothing from the agent after")
		require.Contains(t, string(mains[0].Body), "create_new_topic", "the topic tool is offered")
		require.Contains(t, string(mains[1].Body), `Agents suite`)
		require.NotContains(t, string(res.Stdout), "create_new_topic", "the agent never sees the topic call")
	})
}

// (c) Intent refusal: the model tries to write outside the active intent's
// scope; shepherd refuses the call and tells the model, the agent never runs
// it, and the file does not exist afterwards. The agents run with every
// permission granted, so without shepherd the file would be written.
func TestAgentIntentRefusal(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		s := newStack(t, d, stackOptions{Policy: agentPolicy})
		target := filepath.Join(s.Workdir, "docs", "evil.txt")
		var turns atomic.Int32
		s.script(func(req mock.Recorded, main bool) mock.Reply {
			if !main {
				return sideReply
			}
			if turns.Add(1) == 1 {
				return mock.Reply{ToolCalls: []mock.ToolCall{d.writeCall(target, "pwned")}}
			}
			return mock.Reply{Text: "REFUSAL-SEEN-17"}
		})
		res := mustRun(t, d, s, "Write docs/evil.txt.")
		require.Contains(t, res.Answer, "REFUSAL-SEEN-17")
		require.NoFileExists(t, target, "a refused call must never run")
		mains := s.mainRequests(d)
		require.GreaterOrEqual(t, len(mains), 2)
		require.Contains(t, string(mains[1].Body), "INT-001", "the model is told why (the refusal names the intent)")
	})
}

// agentPolicy allows writes under src/ only, with INT-001 active from the start.
const agentPolicy = `version: 1
current_intent_id: INT-001
intents:
  - id: INT-001
    summary: "Edit the sources"
    scope:
      allow_glob: ["src/**"]
`

// (d) Truncation recovery: the first reply is cut at max_tokens in the middle
// of a tool call; shepherd asks again and the agent receives one complete
// reply, runs the complete call once, and finishes.
func TestAgentTruncationRecovery(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		s := newStack(t, d, stackOptions{Recovery: true})
		target := filepath.Join(s.Workdir, "src", "note.txt")
		full := d.writeCall(target, "recovered")
		cut := full
		cut.Args = full.Args[:len(full.Args)/2]
		var turns atomic.Int32
		s.script(func(req mock.Recorded, main bool) mock.Reply {
			if !main {
				return sideReply
			}
			switch turns.Add(1) {
			case 1:
				return mock.Reply{Text: "Writing the note.", ToolCalls: []mock.ToolCall{cut}, Stop: "max_tokens"}
			case 2:
				return mock.Reply{ToolCalls: []mock.ToolCall{full}}
			}
			return mock.Reply{Text: "RECOVERY-DONE-23"}
		})
		res := mustRun(t, d, s, "Write src/note.txt.")
		require.Contains(t, res.Answer, "RECOVERY-DONE-23")
		b, err := os.ReadFile(target)
		require.NoError(t, err, "the complete call ran")
		require.Equal(t, "recovered", strings.TrimSpace(string(b)))
		require.Len(t, s.mainRequests(d), 3, "cut reply, shepherd's retry, the agent's tool result")
		// One of the three was shepherd's, so the agent sent two: it got one
		// complete reply and never retried a cut one itself (Claude Code
		// would, on a max_tokens stop).
		require.Equal(t, 1.0, s.metric(t, "shepherd_recovery_attempts_total"), "shepherd sent the retry")
		require.Equal(t, 1.0, s.metric(t, "shepherd_recoveries_total", `result="recovered"`))
	})
}

// (e) Two runs of an agent that sends no session id (gemini-cli, Cline):
// shepherd keys both by the fingerprint of the system prompt and the first
// user turn, which the same prompt makes equal. Each run must still get its
// own complete turn: the first run's chapter (the hidden topic call and its
// answer) is never replayed into the second run's history.
func TestAgentTwoRunsWithoutSessionID(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		if !sessionless(d) {
			t.Skipf("%s sends its own session id", d.name())
		}
		s := newStack(t, d, stackOptions{Topics: true})
		var runNo atomic.Int32
		s.script(func(req mock.Recorded, main bool) mock.Reply {
			switch {
			case !main:
				return sideReply
			case strings.Contains(string(req.Body), "Topic changed to"):
				return mock.Reply{Text: fmt.Sprintf("RUN-%d-DONE", runNo.Load())}
			}
			return mock.Reply{ToolCalls: []mock.ToolCall{{Name: "create_new_topic", Args: `{"title":"Agents suite"}`}}}
		})
		for i := int32(1); i <= 2; i++ {
			runNo.Store(i)
			before := len(s.mainRequests(d))
			res := mustRun(t, d, s, "Start a chapter, then say done.")
			require.Contains(t, res.Answer, fmt.Sprintf("RUN-%d-DONE", i))
			mains := s.mainRequests(d)[before:]
			require.Len(t, mains, 2, "run %d: the agent's turn and shepherd's follow-up", i)
			require.NotContains(t, string(mains[0].Body), "Topic changed to",
				"run %d starts from the agent's own history, without an earlier run's chapter", i)
		}
	})
}

// sessionless reports whether d sends no session id of its own.
func sessionless(d driver) bool {
	switch d.(type) {
	case geminiCLI, clineCLI, clineAnthropic:
		return true
	}
	return false
}
