package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// The edit scenario, per CLI (issue 16): the model opens a chapter, creates
// a file with the CLI's own write tool, reads it, and replaces a line of it
// with a block, each call streamed in small chunks with a pause between
// events; the real CLI runs every call in the test's workspace. The test
// checks the file on disk after each step, that shepherd announced each
// edit on the live feed while its call was still streaming and reported its
// size when it was complete, that the session's edit journal lists both
// edits under the file's path with their operation, diff, status and
// chapter, and that one `shepherd edits revert --apply` undoes the last
// edit on disk. With Claude Code this is the "done when".

const (
	editChapter = "Edits scenario chapter"
	editDone    = "EDITS-DONE-64"
	// editChunk and editDelay stream the write and edit calls: editChunk
	// characters per arguments delta, editDelay between events, so the
	// content of a call takes most of a second after its path.
	editChunk = 8
	editDelay = 3 * time.Millisecond
)

// editFile returns the scenario's file content (48 numbered lines), the
// line the edit replaces and the block it puts in its place.
func editFile() (v1, old, repl string) {
	var b, r strings.Builder
	for i := 1; i <= 48; i++ {
		fmt.Fprintf(&b, "%02d: the edits scenario keeps this line as it was\n", i)
	}
	r.WriteString("24: EDITED by the agent\n")
	for i := 1; i <= 24; i++ {
		fmt.Fprintf(&r, "24.%02d: added by the edit, streamed in small chunks\n", i)
	}
	return b.String(), "24: the edits scenario keeps this line as it was\n", r.String()
}

// editScenario scripts the model's side of the scenario and records what
// the test checks afterwards.
type editScenario struct {
	d     driver
	path  string
	steps []editStep

	mu sync.Mutex
	// disk[i] is the file's content when the request after step i arrived
	// (the agent had run the call); nil until then, or when it was missing.
	disk []*string
	// replied[i] are the times the mock was asked for step i's reply.
	replied [][]time.Time
	// sessions[i] is the session edit step i's events named.
	sessions []string
}

// newEditScenario gives each step a call id of its own and scripts s.
func newEditScenario(t *testing.T, d driver, s *stack, path string, steps []editStep) *editScenario {
	t.Helper()
	for i := range steps {
		steps[i].Call.ID = fmt.Sprintf("toolu_edits%02d", i+1)
	}
	sc := &editScenario{d: d, path: path, steps: steps,
		disk: make([]*string, len(steps)), replied: make([][]time.Time, len(steps)), sessions: make([]string, len(steps))}
	s.script(sc.respond)
	return sc
}

// respond answers the agent's turns by how many of the scripted calls its
// history holds: none (before the chapter is open: the topic call; after:
// the first step), then the next step, then the final answer. Each request
// after a step records the file as the agent left it.
func (sc *editScenario) respond(req mock.Recorded, main bool) mock.Reply {
	if !main {
		return sideReply
	}
	body := string(req.Body)
	n := 0
	for _, st := range sc.steps {
		if strings.Contains(body, st.Call.ID) {
			n++
		}
	}
	if n == 0 && !strings.Contains(body, "Topic changed to") {
		return mock.Reply{ToolCalls: []mock.ToolCall{{Name: "create_new_topic", Args: `{"title":"` + editChapter + `"}`}}}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if n > 0 && sc.disk[n-1] == nil {
		if b, err := os.ReadFile(sc.path); err == nil {
			c := string(b)
			sc.disk[n-1] = &c
		}
	}
	if n >= len(sc.steps) {
		return mock.Reply{Text: editDone}
	}
	sc.replied[n] = append(sc.replied[n], time.Now())
	reply := mock.Reply{Text: fmt.Sprintf("Step %d.", n+1), ToolCalls: []mock.ToolCall{sc.steps[n].Call}}
	if sc.steps[n].Op != "" {
		reply.ChunkSize, reply.InterEventDelay = editChunk, editDelay
	}
	return reply
}

// requireDisk checks the file after each step is what the step must leave.
func (sc *editScenario) requireDisk(t *testing.T) {
	t.Helper()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for i, st := range sc.steps {
		require.NotNil(t, sc.disk[i], "step %d (%s): the file exists after the agent ran it", i+1, st.Call.Name)
		require.Equal(t, st.Want, *sc.disk[i], "step %d (%s): the file on disk", i+1, st.Call.Name)
		require.Len(t, sc.replied[i], 1, "step %d (%s) was asked for once", i+1, st.Call.Name)
	}
}

// streamBounds returns when the mock was asked for step i's reply and a
// time before which that reply's stream cannot have ended: the mock sends
// every arguments delta of the call as its own event and waits editDelay
// before each event after the first.
func (sc *editScenario) streamBounds(i int) (begin, endAfter time.Time) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	deltas := (utf8.RuneCountInString(sc.steps[i].Call.Args) + editChunk - 1) / editChunk
	begin = sc.replied[i][0]
	return begin, begin.Add(time.Duration(deltas-1) * editDelay)
}

// edits are the steps that edit the file.
func (sc *editScenario) edits() []int {
	var out []int
	for i, st := range sc.steps {
		if st.Op != "" {
			out = append(out, i)
		}
	}
	return out
}

// TestAgentEdits runs the edit scenario with each CLI (Claude Code's run is
// the "done when").
func TestAgentEdits(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		e, ok := d.(editor)
		if !ok {
			t.Skipf("no edit scenario for %s", d.name())
		}
		s := newFeedStack(t, d, feedStackOptions{ApprovalTimeout: feedHoldTimeout})
		path := filepath.Join(s.Workdir, "src", "edits.txt")
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		v1, old, repl := editFile()
		sc := newEditScenario(t, d, s, path, e.editSteps(path, v1, old, repl))
		feed := followFeed(t, s.URL, "/shepherd/v1/events")
		defer func() {
			if t.Failed() {
				t.Logf("feed:\n%s", listEventsWithSession(feed.snapshot()))
			}
		}()

		res := mustRun(t, d, s, "Open a chapter, create src/edits.txt, then edit line 24 of it, then say done.")
		for _, r := range s.mock.Requests() {
			t.Logf("+%s %s %s tools=%d", r.Time.Sub(res.Start).Round(time.Millisecond), r.Method, r.Path, len(toolNames(r.Body)))
		}
		require.Contains(t, res.Answer, editDone)
		sc.requireDisk(t)

		session, tenant := sc.requireAnnounced(t, feed, res, e.streamsArguments())
		sc.requireJournal(t, s, session, tenant)
		sc.requireRevert(t, s, tenant)
	})
}

// listEventsWithSession is listEvents with each event's session.
func listEventsWithSession(evs []feedEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s [%s] %s\n", e.ID, e.Data.Get("session").String(), e)
	}
	return b.String()
}
