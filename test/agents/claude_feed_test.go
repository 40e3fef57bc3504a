package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// Issue 15's "done when", with the real Claude Code CLI: a person watches a
// Claude Code session's chapters and decisions appear live on the console's
// feed and approves (or denies) a call an intents ask rule holds.

// feedPolicy scopes writes to src/ and asks a person before any Bash call.
const feedPolicy = `version: 1
current_intent_id: INT-001
intents:
  - id: INT-001
    summary: "Edit the sources"
    scope:
      allow_glob: ["src/**"]
    constraints:
      ask_tools: ["Bash"]
`

const (
	feedChapter     = "Console feed chapter"
	feedLive        = 60 * time.Second // longest wait for a live event
	feedHoldTimeout = 30 * time.Second // intents.approval_timeout
)

// agentRun is an agent CLI running in the background.
type agentRun struct {
	done chan result
	res  *result
}

// startAgent runs d with prompt in the background; wait returns its result.
// The test waits for the run before the stack stops, even when it failed.
func startAgent(t *testing.T, d driver, s *stack, prompt string) *agentRun {
	t.Helper()
	r := &agentRun{done: make(chan result, 1)}
	go func() { r.done <- runAgent(t, d, s, prompt) }()
	t.Cleanup(func() { r.wait() })
	return r
}

func (r *agentRun) wait() result {
	if r.res == nil {
		res := <-r.done
		r.res = &res
	}
	return *r.res
}

// running reports whether the run has not ended yet.
func (r *agentRun) running() bool {
	if r.res != nil {
		return false
	}
	select {
	case res := <-r.done:
		r.res = &res
		return false
	default:
		return true
	}
}

// Approve: the model opens a chapter (shepherd answers the topic call
// itself), then makes a Bash call the policy holds. The console's global
// feed shows chapter.opened and call.held while Claude Code waits; the test
// approves through the approvals API; Claude Code then runs the command and
// sends its output back; call.approved, call.allowed and request.finished
// (with usage) follow, and the sessions API shows the session.
func TestClaudeFeedApprove(t *testing.T) {
	d := claudeCode{}
	requireCLI(t, d)
	s := newFeedStack(t, d, feedStackOptions{Policy: feedPolicy, ApprovalTimeout: feedHoldTimeout})
	require.NoError(t, os.MkdirAll(filepath.Join(s.Workdir, "src"), 0o755))
	const callID = "toolu_feedbash01"
	// The shell computes 42: the output is in no argument, only the
	// command's run produces it.
	command := `echo FEED-$((6*7)) | tee src/ran.txt`
	s.script(func(req mock.Recorded, main bool) mock.Reply {
		body := string(req.Body)
		switch {
		case !main:
			return sideReply
		case strings.Contains(body, "FEED-42"):
			return mock.Reply{Text: "FEED-APPROVED-DONE"}
		case strings.Contains(body, "Topic changed to"):
			return mock.Reply{Text: "Running it.", ToolCalls: []mock.ToolCall{{ID: callID, Name: "Bash", Args: bashArgs(command)}}}
		}
		return mock.Reply{ToolCalls: []mock.ToolCall{{Name: "create_new_topic", Args: `{"title":"` + feedChapter + `"}`}}}
	})

	feed := followFeed(t, s.URL, "/shepherd/v1/events")
	run := startAgent(t, d, s, "Open a chapter, run the command, then say done.")

	chapter, ci := feed.waitFor(t, feedLive, 0, "chapter.opened", ofType("chapter.opened"))
	require.Equal(t, feedChapter, chapter.Data.Get("data.title").String())
	held, hi := feed.waitFor(t, feedLive, ci, "call.held after the chapter", ofType("call.held"))
	heldSeen := time.Now()
	require.True(t, run.running(), "Claude Code waits while its call is held")
	hd := held.Data.Get("data")
	require.Equal(t, "Bash", hd.Get("tool").String())
	require.Equal(t, callID, hd.Get("call_id").String())
	require.Equal(t, "ask_tools", hd.Get("rule").String())
	require.Equal(t, "INT-001", hd.Get("intent").String())
	require.Contains(t, hd.Get("reason").String(), "approval")
	require.Contains(t, hd.Get("args").String(), "tee src/ran.txt")
	session, approval := held.Data.Get("session").String(), hd.Get("approval").String()
	require.NotEmpty(t, session)
	require.NotEmpty(t, approval)
	require.Equal(t, session, chapter.Data.Get("session").String(), "one session: the chapter and the held call")
	// The session's own feed, opened mid-hold with the tenant (the session
	// is not saved before its first turn ends), replays the same events.
	tenant := held.Data.Get("tenant").String()
	sessFeed := followFeed(t, s.URL, "/shepherd/v1/sessions/"+session+"/events?tenant="+tenant)
	sessFeed.waitFor(t, feedLive, 0, "call.held on the session's feed", func(e feedEvent) bool {
		return ofType("call.held")(e) && e.Data.Get("data.approval").String() == approval
	})

	// The console's pending list shows it; nothing ran yet.
	pending := getJSON(t, s.URL+"/shepherd/v1/approvals").Get("approvals")
	require.Len(t, pending.Array(), 1, pending.Raw)
	require.Equal(t, approval, pending.Get("0.id").String())
	require.NoFileExists(t, filepath.Join(s.Workdir, "src", "ran.txt"), "a held call has not run")
	time.Sleep(600 * time.Millisecond) // a few keepalives: Claude Code must keep waiting
	require.True(t, run.running(), "Claude Code still waits through the keepalives")

	decided := decideApproval(t, s.URL, session, approval, "approve", "")
	approvedAt := time.Now()
	require.Equal(t, "approved", decided.Get("decision").String(), decided.Raw)

	approved, ai := feed.waitFor(t, feedLive, hi, "call.approved", ofType("call.approved"))
	require.Equal(t, approval, approved.Data.Get("data.approval").String())
	require.Equal(t, "console", approved.Data.Get("data.by").String())
	feed.waitFor(t, feedLive, ai, "call.allowed of the approved call", func(e feedEvent) bool {
		return ofType("call.allowed")(e) && e.Data.Get("data.call_id").String() == callID
	})
	fin, _ := feed.waitFor(t, feedLive, ai, "request.finished after the approval", ofType("request.finished"))
	requireUsage(t, fin.Data.Get("data.usage"))
	require.Equal(t, "tool_use", fin.Data.Get("data.stop").String(), "the held turn ended on the released call")

	res := run.wait()
	require.NoError(t, res.Err)
	runEnd := res.Start.Add(res.Elapsed)
	require.Contains(t, res.Answer, "FEED-APPROVED-DONE")
	require.True(t, chapter.Received.Before(runEnd) && held.Received.Before(runEnd), "the chapter and the hold were shown live")

	// Claude Code ran the approved command: its next request carries the
	// call's result, with the shell's output, and the file exists.
	var resultReq *mock.Recorded
	for _, r := range s.mainRequests(d) {
		if out, ok := toolResult(r.Body, callID); ok {
			require.Contains(t, out, "FEED-42")
			resultReq = &r
			break
		}
	}
	require.NotNil(t, resultReq, "no request carried the tool_result of %s", callID)
	b, err := os.ReadFile(filepath.Join(s.Workdir, "src", "ran.txt"))
	require.NoError(t, err)
	require.Equal(t, "FEED-42", strings.TrimSpace(string(b)))

	// The turn that carried the result finished too, with usage.
	lastFin, _ := feed.waitFor(t, feedLive, ai, "request.finished of the last turn", func(e feedEvent) bool {
		return ofType("request.finished")(e) && e.Data.Get("data.stop").String() == "end"
	})
	requireUsage(t, lastFin.Data.Get("data.usage"))

	sessFeed.waitFor(t, feedLive, 0, "call.approved on the session's feed", ofType("call.approved"))
	sess := requireSessionShown(t, s.URL, session)
	requireUsageAgrees(t, feed.snapshot(), session, sess)
	t.Logf("timings: call.held seen %s after the run started; approve→feed call.approved %s; approve→Claude Code's tool_result request %s; run %s",
		heldSeen.Sub(res.Start).Round(time.Millisecond), approved.Received.Sub(approvedAt).Round(time.Millisecond),
		resultReq.Time.Sub(approvedAt).Round(time.Millisecond), res.Elapsed.Round(time.Millisecond))
	t.Logf("feed:\n%s", listEvents(feed.snapshot()))
}

// Deny: the held Bash call is denied with a note; the model receives the
// refusal with the note in shepherd's follow-up, Claude Code never sees
// (or runs) the call, and the feed shows call.denied and call.refused.
func TestClaudeFeedDeny(t *testing.T) {
	d := claudeCode{}
	requireCLI(t, d)
	s := newFeedStack(t, d, feedStackOptions{Policy: feedPolicy, ApprovalTimeout: feedHoldTimeout})
	require.NoError(t, os.MkdirAll(filepath.Join(s.Workdir, "src"), 0o755))
	const callID, note = "toolu_feedbash02", "not during the release freeze"
	target := filepath.Join(s.Workdir, "src", "denied.txt")
	s.script(func(req mock.Recorded, main bool) mock.Reply {
		body := string(req.Body)
		switch {
		case !main:
			return sideReply
		case strings.Contains(body, "denied by a person"):
			return mock.Reply{Text: "DENIAL-SEEN-88"}
		}
		return mock.Reply{ToolCalls: []mock.ToolCall{{ID: callID, Name: "Bash", Args: bashArgs("touch src/denied.txt")}}}
	})

	feed := followFeed(t, s.URL, "/shepherd/v1/events")
	run := startAgent(t, d, s, "Touch the file, then say done.")

	held, hi := feed.waitFor(t, feedLive, 0, "call.held", ofType("call.held"))
	require.True(t, run.running(), "Claude Code waits while its call is held")
	require.Equal(t, "Bash", held.Data.Get("data.tool").String())
	session, approval := held.Data.Get("session").String(), held.Data.Get("data.approval").String()

	decideApproval(t, s.URL, session, approval, "deny", note)
	denied, di := feed.waitFor(t, feedLive, hi, "call.denied", ofType("call.denied"))
	require.Equal(t, note, denied.Data.Get("data.note").String())
	require.Equal(t, "console", denied.Data.Get("data.by").String())
	refused, _ := feed.waitFor(t, feedLive, di, "call.refused of the denied call", ofType("call.refused"))
	require.Equal(t, callID, refused.Data.Get("data.call_id").String())
	require.Contains(t, refused.Data.Get("data.reason").String(), note)

	res := run.wait()
	require.NoError(t, res.Err)
	require.Contains(t, res.Answer, "DENIAL-SEEN-88")
	require.True(t, held.Received.Before(res.Start.Add(res.Elapsed)), "the hold was shown live")
	require.NoFileExists(t, target, "a denied call never runs")

	mains := s.mainRequests(d)
	require.Len(t, mains, 2, "Claude Code's turn and shepherd's follow-up with the refusal; nothing from Claude Code after")
	out, ok := toolResult(mains[1].Body, callID)
	require.True(t, ok, "the follow-up answers the denied call")
	require.Contains(t, out, "Tool call refused: denied by a person.")
	require.Contains(t, out, note)
	for _, e := range feed.snapshot() {
		if e.Type == "call.allowed" {
			require.NotEqual(t, callID, e.Data.Get("data.call_id").String(), "the denied call never reached Claude Code")
		}
	}
	fin, _ := feed.waitFor(t, feedLive, di, "request.finished", ofType("request.finished"))
	requireUsage(t, fin.Data.Get("data.usage"))
	sess := requireSessionShown(t, s.URL, session)
	requireUsageAgrees(t, feed.snapshot(), session, sess)
	t.Logf("feed:\n%s", listEvents(feed.snapshot()))
}

func bashArgs(command string) string {
	b, _ := json.Marshal(map[string]string{"command": command, "description": "console feed test"})
	return string(b)
}

// toolResult finds the Anthropic tool_result block answering callID in a
// Messages request and returns its text.
func toolResult(body []byte, callID string) (string, bool) {
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		for _, c := range m.Get("content").Array() {
			if c.Get("type").String() != "tool_result" || c.Get("tool_use_id").String() != callID {
				continue
			}
			content := c.Get("content")
			if content.Type == gjson.String {
				return content.String(), true
			}
			var sb strings.Builder
			for _, part := range content.Array() {
				sb.WriteString(part.Get("text").String())
			}
			return sb.String(), true
		}
	}
	return "", false
}

// requireUsage checks a request.finished usage object counted tokens.
func requireUsage(t *testing.T, u gjson.Result) {
	t.Helper()
	require.True(t, u.Exists(), "request.finished carries usage")
	require.Positive(t, u.Get("input_tokens").Int()+u.Get("cache_read_tokens").Int(), u.Raw)
	require.Positive(t, u.Get("output_tokens").Int(), u.Raw)
}

// requireSessionShown checks the sessions API shows the session as Claude
// Code's, with its model and its usage, and returns it.
func requireSessionShown(t *testing.T, base, session string) gjson.Result {
	t.Helper()
	sess := getJSON(t, base+"/shepherd/v1/sessions/"+session)
	require.Equal(t, "claude-code", sess.Get("agent").String(), sess.Raw)
	require.Equal(t, "claude-sonnet-4-5", sess.Get("model").String(), sess.Raw)
	require.Positive(t, sess.Get("usage.turns").Int(), sess.Raw)
	require.Positive(t, sess.Get("usage.input_tokens").Int(), sess.Raw)
	require.Positive(t, sess.Get("usage.output_tokens").Int(), sess.Raw)
	require.Greater(t, sess.Get("usage.cost_usd").Float(), 0.0, "claude-sonnet-4-5 has a list price: %s", sess.Raw)
	list := getJSON(t, base+"/shepherd/v1/sessions")
	found := false
	for _, s := range list.Get("sessions").Array() {
		if s.Get("id").String() == session {
			found = true
			require.Equal(t, "claude-code", s.Get("agent").String(), s.Raw)
		}
	}
	require.True(t, found, "the session is listed: %s", list.Raw)
	return sess
}

// requireUsageAgrees checks the session's usage (sessions API) is the sum of
// its request.finished events' usage and cost on the feed.
func requireUsageAgrees(t *testing.T, evs []feedEvent, session string, sess gjson.Result) {
	t.Helper()
	var in, out int64
	var cost float64
	for _, e := range evs {
		if e.Type == "request.finished" && e.Data.Get("session").String() == session {
			in += e.Data.Get("data.usage.input_tokens").Int()
			out += e.Data.Get("data.usage.output_tokens").Int()
			cost += e.Data.Get("data.cost_usd").Float()
		}
	}
	require.Equal(t, in, sess.Get("usage.input_tokens").Int(), "input tokens: feed vs sessions API")
	require.Equal(t, out, sess.Get("usage.output_tokens").Int(), "output tokens: feed vs sessions API")
	require.InDelta(t, cost, sess.Get("usage.cost_usd").Float(), 1e-9, "cost: feed vs sessions API")
}
