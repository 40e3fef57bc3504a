package proxy_test

// The edits feature through the real proxy: a session writes a file, then
// edits it. Each edit is announced (edit.started while the call streams,
// edit.finished when it is complete) and journalled with its diff, the
// content before and after, and the chapter topics opened in the same
// reply.

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

const editFile = "/w/notes.txt"

// editContent is what the Write writes: long enough that its call streams
// in many deltas.
func editContent() string {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// editScript is the model's side of the scenario: a chapter and a Write,
// then an Edit of the file, then the end.
func editScript(m *mock.Server) {
	m.Script(
		mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{
			{ID: "t1", Name: "create_new_topic", Args: `{"title":"Implementing"}`},
			{ID: "w1", Name: "Write", Args: `{"file_path":` + kit.Quote(editFile) + `,"content":` + kit.Quote(editContent()) + `}`},
		}},
		mock.Reply{ID: "m2", ToolCalls: []mock.ToolCall{
			{ID: "e1", Name: "Edit", Args: `{"file_path":` + kit.Quote(editFile) + `,"old_string":"line 7\n","new_string":"line seven\n"}`},
		}},
		mock.Reply{ID: "m3", Text: "Done."},
	)
}

var editTools = []kit.Tool{
	{Name: "Write", Description: "Write a file", Schema: `{"type":"object"}`},
	{Name: "Edit", Description: "Edit a file", Schema: `{"type":"object"}`},
}

// requireEditJournal checks the session's journal after the scenario.
func requireEditJournal(t *testing.T, h *editsHarness, session string) {
	t.Helper()
	recs := h.journalOf(t, session, 2)
	content := editContent()
	w, e := recs[0], recs[1]
	require.Equal(t, editFile, w.Path)
	require.Equal(t, "Write", w.Tool)
	require.Equal(t, "w1", w.CallID)
	require.Equal(t, state.EditCreate, w.Operation)
	require.Equal(t, state.EditApplied, w.Status)
	require.Equal(t, "Implementing", w.Chapter, "the chapter the same reply opened")
	require.True(t, w.BeforeKnown)
	require.Equal(t, "", *w.Before)
	require.Equal(t, content, *w.After)
	require.Contains(t, w.Diff, "+line 40\n")
	require.Equal(t, int64(len(content)), w.Size)

	require.Equal(t, "Edit", e.Tool)
	require.Equal(t, "e1", e.CallID)
	require.Equal(t, state.EditModify, e.Operation)
	require.Equal(t, state.EditApplied, e.Status)
	require.Equal(t, "Implementing", e.Chapter)
	require.True(t, e.BeforeKnown, "the Write earlier in the request gave the content")
	require.Equal(t, content, *e.Before)
	require.Equal(t, strings.Replace(content, "line 7\n", "line seven\n", 1), *e.After)
	require.Contains(t, e.Diff, "-line 7\n+line seven\n")
	require.Less(t, w.Seq, e.Seq)
}

// requireEditEvents checks the announcements of the scenario, in order.
func requireEditEvents(t *testing.T, h *editsHarness, session string) []timedEvent {
	t.Helper()
	var got []string
	var evs []timedEvent
	for _, e := range h.events.edits() {
		if e.ev.Session != session {
			continue
		}
		evs = append(evs, e)
		d := e.ev.Data
		s := fmt.Sprintf("%s %v %v %v %v chapter=%v", e.ev.Type, d["tool"], d["call_id"], d["path"], d["operation"], d["chapter"])
		if e.ev.Type == events.EditFinished {
			s += fmt.Sprintf(" size=%v", d["size"])
		}
		got = append(got, s)
	}
	require.Equal(t, []string{
		"edit.started Write w1 " + editFile + " create chapter=",
		fmt.Sprintf("edit.finished Write w1 %s create chapter= size=%d", editFile, len(editContent())),
		"edit.started Edit e1 " + editFile + " modify chapter=Implementing",
		"edit.finished Edit e1 " + editFile + " modify chapter=Implementing size=11",
	}, got)
	return evs
}

// TestEditsJSON: the scenario with non-streamed replies, on Anthropic and
// OpenAI Chat.
func TestEditsJSON(t *testing.T) {
	for _, api := range []string{"anthropic", "openai_chat"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			h := newEditsHarness(t, mock.Options{})
			editScript(h.mock)
			d, _ := kit.Lookup(api)
			session := "edits-json-" + api
			a := kit.NewAgent(d, h.URL, map[string]string{"X-Session-Id": session})
			a.Request.Tools = append(a.Request.Tools, editTools...)
			a.User("write the notes")
			r, _, _ := a.Send(t)
			require.Len(t, r.Calls, 1, "create_new_topic was answered by shepherd")
			require.Equal(t, "Write", r.Calls[0].Name)
			a.ToolResult(r.Calls[0].ID, "Write", "File created successfully at: "+editFile)
			r, _, _ = a.Send(t)
			require.Len(t, r.Calls, 1)
			require.Equal(t, "Edit", r.Calls[0].Name)
			a.ToolResult(r.Calls[0].ID, "Edit", "The file "+editFile+" has been updated.")
			r, _, _ = a.Send(t)
			require.Equal(t, "Done.", r.Text)

			requireEditEvents(t, h, session)
			requireEditJournal(t, h, session)

			// The edits API serves the journal, and the Edit's revert
			// restores the content the Write wrote.
			resp, body := do(t, "GET", h.URL+"/shepherd/v1/sessions/"+session+"/edits", "", nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			list := gjson.ParseBytes(body)
			if l := list.Get("edits"); l.Exists() {
				list = l
			}
			require.Len(t, list.Array(), 2, "%s", body)
			seq := list.Get("1.seq").String()
			resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/"+session+"/edits/"+seq+"/revert", "", nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			require.Equal(t, "restore", gjson.GetBytes(body, "mode").String(), "%s", body)
			require.Equal(t, editContent(), gjson.GetBytes(body, "before").String())
		})
	}
}

// TestEditsAnthropicStream: the scenario streamed on Anthropic, the
// arguments in small deltas with a delay between events: each edit is
// announced before the stream that carries it ends.
func TestEditsAnthropicStream(t *testing.T) {
	h := newEditsHarness(t, mock.Options{ChunkSize: 8, InterEventDelay: 2 * time.Millisecond})
	editScript(h.mock)
	d, _ := kit.Lookup("anthropic")
	session := "edits-stream-anthropic"
	a := kit.NewAgent(d, h.URL, map[string]string{"X-Session-Id": session})
	a.Request.Tools = append(a.Request.Tools, editTools...)
	a.Request.Stream = true
	a.User("write the notes")

	var ends []time.Time
	for turn := range 3 {
		body, end := streamTurn(t, a)
		ends = append(ends, end)
		r, err := d.ParseStream(body)
		require.NoError(t, err)
		if turn == 2 {
			require.Equal(t, "Done.", r.Text)
			break
		}
		require.Len(t, r.Calls, 1)
		c := r.Calls[0]
		a.History = append(a.History, `{"role":"assistant","content":[{"type":"tool_use","id":`+kit.Quote(c.ID)+
			`,"name":`+kit.Quote(c.Name)+`,"input":`+c.Args+`}]}`)
		a.ToolResult(c.ID, c.Name, "ok")
	}

	evs := requireEditEvents(t, h, session)
	require.True(t, evs[0].at.Before(ends[0]), "the Write was announced before its stream ended")
	require.True(t, evs[2].at.Before(ends[1]), "the Edit was announced before its stream ended")
	require.True(t, evs[0].at.Before(evs[1].at))
	requireEditJournal(t, h, session)
}

// streamTurn posts a's next (streamed) turn and reads the reply line by
// line; it returns the body and when its last event (message_stop) was
// read.
func streamTurn(t *testing.T, a *kit.Agent) ([]byte, time.Time) {
	t.Helper()
	req, err := http.NewRequest("POST", a.URL+a.D.Path("", true), strings.NewReader(a.Body()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range a.D.Headers() {
		req.Header.Set(k, v)
	}
	for k, v := range a.Header {
		req.Header.Set(k, v)
	}
	resp, err := kit.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body strings.Builder
	var end time.Time
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		body.WriteString(line)
		if strings.HasPrefix(line, "event: message_stop") {
			end = time.Now()
		}
		if err != nil {
			break
		}
	}
	require.False(t, end.IsZero(), "the stream ended with message_stop: %s", body.String())
	return []byte(body.String()), end
}

// TestEditsResponsesPatch: Codex's apply_patch as a free-form call on the
// Responses API: a patch adds a file, a second one updates it. The second
// entry's before-content comes from the first patch in the request's
// history.
func TestEditsResponsesPatch(t *testing.T) {
	h := newEditsHarness(t, mock.Options{})
	add := "*** Begin Patch\n*** Add File: notes.txt\n+line 1\n+line 2\n+line 3\n*** End Patch\n"
	update := "*** Begin Patch\n*** Update File: notes.txt\n@@\n line 1\n-line 2\n+line two\n line 3\n*** End Patch\n"
	h.mock.Script(
		mock.Reply{ID: "r1", ToolCalls: []mock.ToolCall{{ID: "p1", Name: "apply_patch", Args: add, Custom: true}}},
		mock.Reply{ID: "r2", ToolCalls: []mock.ToolCall{{ID: "p2", Name: "apply_patch", Args: update, Custom: true}}},
		mock.Reply{ID: "r3", Text: "Done."},
	)
	d, _ := kit.Lookup("openai_responses")
	session := "edits-responses-patch"
	a := kit.NewAgent(d, h.URL, map[string]string{"X-Session-Id": session})
	a.User("add the notes")
	for turn := range 3 {
		r, _, body := a.Send(t)
		if turn == 2 {
			require.Equal(t, "Done.", r.Text)
			break
		}
		id := gjson.GetBytes(body, `output.#(type=="custom_tool_call").call_id`).String()
		require.NotEmpty(t, id, "the custom call reached the agent: %s", body)
		a.History = append(a.History, `{"type":"custom_tool_call_output","call_id":`+kit.Quote(id)+`,"output":"Done!"}`)
	}

	var got []string
	for _, e := range h.events.edits() {
		got = append(got, fmt.Sprintf("%s %v %v %v", e.ev.Type, e.ev.Data["tool"], e.ev.Data["path"], e.ev.Data["operation"]))
	}
	require.Equal(t, []string{
		"edit.started apply_patch notes.txt create", "edit.finished apply_patch notes.txt create",
		"edit.started apply_patch notes.txt modify", "edit.finished apply_patch notes.txt modify",
	}, got)
	recs := h.journalOf(t, session, 2)
	require.Equal(t, state.EditCreate, recs[0].Operation)
	require.Equal(t, "line 1\nline 2\nline 3\n", *recs[0].After)
	require.Equal(t, state.EditModify, recs[1].Operation)
	require.True(t, recs[1].BeforeKnown, "the first patch in the history gave the content")
	require.Equal(t, "line 1\nline 2\nline 3\n", *recs[1].Before)
	require.Equal(t, "line 1\nline two\nline 3\n", *recs[1].After)
	require.Contains(t, recs[1].Diff, "-line 2\n+line two\n")
}
