package edits

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestBeforeFromReadResult: a whole-file read result earlier in the
// request makes the file's content known; an Edit of it is journalled as
// a modify with before, after and their diff, under the chapter and intent
// the turn saved.
func TestBeforeFromReadResult(t *testing.T) {
	r := newRig(t, testJournal(t))
	call := callOn(session("Research", ""),
		user("fix it"),
		assistantCall("r1", "Read", args("file_path", "/w/a.go")),
		result("r1", "Read", readResult("package a\n\nfunc A() {}\n"), false), // Claude Code's Read loses the last newline
	)
	call.Saved = session("Implementing Fix", "INT-001")
	r.outcome(t, call, delivered("e1", "Edit", args("file_path", "/w/a.go", "old_string", "func A() {}", "new_string", "func A() int { return 1 }")))

	recs := r.edits(t, "/w/a.go")
	require.Len(t, recs, 1)
	rec := recs[0]
	require.Equal(t, state.EditModify, rec.Operation)
	require.Equal(t, state.EditApplied, rec.Status)
	require.Equal(t, "Edit", rec.Tool)
	require.Equal(t, "e1", rec.CallID)
	require.True(t, rec.BeforeKnown)
	require.Equal(t, "package a\n\nfunc A() {}", *rec.Before)
	require.Equal(t, "package a\n\nfunc A() int { return 1 }", *rec.After)
	require.Contains(t, rec.Diff, "--- a/w/a.go")
	require.Contains(t, rec.Diff, "-func A() {}\n")
	require.Contains(t, rec.Diff, "+func A() int { return 1 }\n")
	require.Equal(t, "Implementing Fix", rec.Chapter, "the chapter as the turn saved it")
	require.Equal(t, "INT-001", rec.Intent)
	require.Equal(t, testNow, rec.At)
	require.Equal(t, 1.0, r.count("Edit", state.EditModify, state.EditApplied))
}

// TestBeforeFromEarlierWrite: an earlier Write whose result came back fine
// gives the content; a failed one changes nothing; a second Write of the
// file is a rewrite.
func TestBeforeFromEarlierWrite(t *testing.T) {
	r := newRig(t, testJournal(t))
	call := callOn(session("", ""),
		user("go"),
		assistantCall("w1", "Write", args("file_path", "a.txt", "content", "one\ntwo\n")),
		result("w1", "Write", "File created successfully at: a.txt", false),
		assistantCall("w2", "Write", args("file_path", "a.txt", "content", "broken\n")),
		result("w2", "Write", "Error: disk full", true),
	)
	r.outcome(t, call,
		delivered("e1", "Edit", args("file_path", "a.txt", "old_string", "two", "new_string", "three")),
		delivered("w3", "Write", args("file_path", "a.txt", "content", "four\n")),
	)
	recs := r.edits(t, "a.txt")
	require.Len(t, recs, 2)
	require.Equal(t, "one\ntwo\n", *recs[0].Before, "the failed write changed nothing")
	require.Equal(t, "one\nthree\n", *recs[0].After)
	require.Equal(t, state.EditRewrite, recs[1].Operation)
	require.Equal(t, "one\nthree\n", *recs[1].Before, "the second call of the turn sees the first's after")
	require.Equal(t, "four\n", *recs[1].After)
	require.Equal(t, int64(5), recs[1].Size)
}

// TestBeforeUnknown: an Edit of a file the session never saw keeps no
// content and the call's own diff; a Write of one is a create (known and
// empty before).
func TestBeforeUnknown(t *testing.T) {
	r := newRig(t, testJournal(t))
	r.outcome(t, callOn(session("", ""), user("go")),
		delivered("e1", "Edit", args("file_path", "b.go", "old_string", "x := 1", "new_string", "x := 2")),
		delivered("w1", "Write", args("file_path", "c.go", "content", "package c\n")),
	)
	recs := r.edits(t, "")
	require.Len(t, recs, 2)
	e := recs[0]
	require.False(t, e.BeforeKnown)
	require.Nil(t, e.Before)
	require.Nil(t, e.After)
	require.Equal(t, state.EditModify, e.Operation)
	require.Contains(t, e.Diff, "-x := 1")
	require.Contains(t, e.Diff, "+x := 2")
	w := recs[1]
	require.Equal(t, state.EditCreate, w.Operation)
	require.True(t, w.BeforeKnown)
	require.Equal(t, "", *w.Before)
	require.Equal(t, "package c\n", *w.After)
	require.Contains(t, w.Diff, "+package c")
}

// TestRefusedJournalledAsRefused: a refused call is journalled with the
// refusal as its reason and changes nothing for the next call of the turn;
// claimed, dropped and undelivered calls are not journalled.
func TestRefusedJournalledAsRefused(t *testing.T) {
	r := newRig(t, testJournal(t))
	call := callOn(session("", ""),
		assistantCall("r1", "Read", args("file_path", "a.txt")),
		result("r1", "Read", readResult("hello\n"), false),
	)
	refused := delivered("w1", "Write", args("file_path", "a.txt", "content", "evil\n"))
	refused.Fate, refused.Result = conv.FateRefused, `"a.txt" is outside the scope of intent INT-001`
	claimed := delivered("w2", "Write", args("file_path", "b.txt", "content", "b"))
	claimed.Fate = conv.FateClaimed
	dropped := delivered("w3", "Write", args("file_path", "c.txt", "content", "c"))
	dropped.Fate = conv.FateDropped
	undelivered := delivered("w4", "Write", args("file_path", "d.txt", "content", "d"))
	undelivered.Fate = conv.FateUndelivered
	r.outcome(t, call, refused, claimed, dropped, undelivered,
		delivered("e1", "Edit", args("file_path", "a.txt", "old_string", "hello", "new_string", "bye")))

	recs := r.edits(t, "")
	require.Len(t, recs, 2)
	require.Equal(t, state.EditRefused, recs[0].Status)
	require.Equal(t, `"a.txt" is outside the scope of intent INT-001`, recs[0].Reason)
	require.Equal(t, state.EditRewrite, recs[0].Operation)
	require.Equal(t, "evil\n", *recs[0].After)
	require.Equal(t, "hello", *recs[1].Before, "the refused write changed nothing")
	require.Equal(t, 1.0, r.count("Write", state.EditRewrite, state.EditRefused))
}

// TestFailedMarking: the request's newest tool results that are errors
// mark the journalled calls they answer failed, with the error's first
// line; results of other tools and older results are left alone.
func TestFailedMarking(t *testing.T) {
	j := testJournal(t)
	r := newRig(t, j)
	r.outcome(t, callOn(session("", ""), user("go")),
		delivered("w1", "Write", args("file_path", "a.txt", "content", "a")),
		delivered("w2", "Write", args("file_path", "b.txt", "content", "b")),
	)
	next := callOn(session("", ""),
		user("go"),
		assistantCall("w1", "Write", args("file_path", "a.txt", "content", "a")),
		result("w1", "Write", "\n  Error: permission denied\nstack…", true),
	)
	next.Request.Messages = append(next.Request.Messages, result("w2", "Write", "ok", false))
	r.outcome(t, next)

	recs := r.edits(t, "")
	require.Len(t, recs, 2)
	require.Equal(t, state.EditFailed, recs[0].Status)
	require.Equal(t, "Error: permission denied", recs[0].Reason)
	require.Equal(t, state.EditApplied, recs[1].Status)
	require.Equal(t, 1.0, r.count("Write", "", state.EditFailed))
}

// TestJournalUnderSavedSession: an opening request of an agent that sends
// no session id is saved under its continuation's id (Call.Saved): the
// turn's entries are journalled there, not under the request's own id, and
// so are the failed marks of a later request of that session.
func TestJournalUnderSavedSession(t *testing.T) {
	j := testJournal(t)
	r := newRig(t, j)
	open := callOn(session("", ""), user("go"))
	open.SessionID = "fp-open-1"
	open.Saved = session("Implementing Fix", "")
	open.Saved.ID, open.Saved.Tenant = testKey.Session, testKey.Tenant
	r.outcome(t, open, delivered("w1", "Write", args("file_path", "a.txt", "content", "a")))

	recs := r.edits(t, "")
	require.Len(t, recs, 1, "journalled under the session the turn was saved under")
	require.Equal(t, "Implementing Fix", recs[0].Chapter)
	gone, err := j.Edits(t.Context(), state.Key{Tenant: testKey.Tenant, Session: "fp-open-1"}, "")
	require.NoError(t, err)
	require.Empty(t, gone, "nothing under the opening request's own id")

	next := callOn(session("", ""), user("go"),
		assistantCall("w1", "Write", args("file_path", "a.txt", "content", "a")),
		result("w1", "Write", "Error: read-only file system", true))
	next.Saved = open.Saved
	r.outcome(t, next)
	recs = r.edits(t, "")
	require.Len(t, recs, 1)
	require.Equal(t, state.EditFailed, recs[0].Status)
}

// TestBeforeFromJournal: a path the request's history never shows (the
// agent compacted it away) takes its before-content from the journal's
// newest applied entry.
func TestBeforeFromJournal(t *testing.T) {
	r := newRig(t, testJournal(t))
	r.outcome(t, callOn(session("", ""), user("go")),
		delivered("w1", "Write", args("file_path", "a.txt", "content", "v1\n")))
	refused := delivered("w2", "Write", args("file_path", "a.txt", "content", "nope\n"))
	refused.Fate = conv.FateRefused
	r.outcome(t, callOn(session("", ""), user("go")), refused)
	r.outcome(t, callOn(session("", ""), user("summary of earlier work")),
		delivered("e1", "Edit", args("file_path", "a.txt", "old_string", "v1", "new_string", "v2")))
	recs := r.edits(t, "a.txt")
	require.Len(t, recs, 3)
	require.True(t, recs[2].BeforeKnown)
	require.Equal(t, "v1\n", *recs[2].Before, "the newest applied entry, not the refused one")
	require.Equal(t, "v2\n", *recs[2].After)
}

// TestMaxContentBytes: contents over max_content_bytes are not kept; the
// entry says the before-content is unknown and keeps the call's diff.
func TestMaxContentBytes(t *testing.T) {
	r := newRig(t, testJournal(t), func(o *Options) { o.MaxContentBytes = 16 })
	big := strings.Repeat("x", 20) + "\nend\n"
	call := callOn(session("", ""),
		assistantCall("r1", "Read", args("file_path", "big.txt")),
		result("r1", "Read", readResult(big), false),
	)
	r.outcome(t, call, delivered("e1", "Edit", args("file_path", "big.txt", "old_string", "end", "new_string", "fin")))
	rec := r.edits(t, "big.txt")[0]
	require.False(t, rec.BeforeKnown)
	require.Nil(t, rec.Before)
	require.Nil(t, rec.After)
	require.Contains(t, rec.Diff, "-end")
}

// TestJournalSizeFIFO: per path only the newest journal_size entries stay.
func TestJournalSizeFIFO(t *testing.T) {
	r := newRig(t, testJournal(t), func(o *Options) { o.JournalSize = 3 })
	for i := range 5 {
		r.outcome(t, callOn(session("", ""), user("go")),
			delivered("w"+itoa(i), "Write", args("file_path", "a.txt", "content", itoa(i))),
			delivered("o"+itoa(i), "Write", args("file_path", "other.txt", "content", itoa(i))))
	}
	recs := r.edits(t, "a.txt")
	require.Len(t, recs, 3)
	require.Equal(t, []string{"w2", "w3", "w4"}, []string{recs[0].CallID, recs[1].CallID, recs[2].CallID})
	require.Len(t, r.edits(t, "other.txt"), 3)
}

// TestJournalErrorsCounted: a journal that fails is counted and logged;
// the hook never returns an error.
func TestJournalErrorsCounted(t *testing.T) {
	j := &fakeJournal{fail: errors.New("redis down")}
	r := newRig(t, j)
	r.outcome(t, callOn(session("", ""), user("go")), delivered("w1", "Write", args("file_path", "a.txt", "content", "a")))
	require.Positive(t, counter(r.m.journalErrors))
	require.Zero(t, r.count("Write", state.EditCreate, state.EditApplied))
}

// TestQueueFullDrops: while the writer is stuck, turns beyond the queue
// are dropped and counted, never waited for; Close flushes the rest.
func TestQueueFullDrops(t *testing.T) {
	j := &fakeJournal{block: make(chan struct{})}
	r := newRig(t, j, func(o *Options) { o.Queue = 2 })
	for i := range 6 {
		require.NoError(t, r.h.OnOutcome(t.Context(), callOn(session("", ""), user("go")),
			&conv.TurnOutcome{Calls: []conv.Outcome{delivered("w"+itoa(i), "Write", args("file_path", "a.txt", "content", "a"))}}))
	}
	require.GreaterOrEqual(t, counter(r.m.dropped), 3.0)
	close(j.block)
	require.NoError(t, r.h.Close())
	recs, _ := j.Edits(t.Context(), testKey, "")
	require.Equal(t, float64(6), float64(len(recs))+counter(r.m.dropped), "every turn journalled or counted as dropped")
}

// TestNoJournal: without a journal nothing is written and nothing fails.
func TestNoJournal(t *testing.T) {
	r := newRig(t, nil)
	r.outcome(t, callOn(session("", ""), user("go")), delivered("w1", "Write", args("file_path", "a.txt", "content", "a")))
	require.Equal(t, 1.0, r.count("Write", state.EditCreate, state.EditApplied))
}

// TestSideRequestIgnored: a side request journals nothing.
func TestSideRequestIgnored(t *testing.T) {
	r := newRig(t, testJournal(t))
	call := callOn(session("", ""), user("go"))
	call.Side = "no_tools"
	r.outcome(t, call, delivered("w1", "Write", args("file_path", "a.txt", "content", "a")))
	require.Empty(t, r.edits(t, ""))
	require.Nil(t, r.h.WatchCalls(call))
}

// TestBeforeWithoutCallIDs: where calls and results carry no ids (Gemini),
// a result answers the oldest unanswered call of its tool.
func TestBeforeWithoutCallIDs(t *testing.T) {
	r := newRig(t, testJournal(t))
	call := callOn(session("", ""),
		conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
			{Kind: conv.BlockToolCall, ToolName: "Read", Args: args("file_path", "a.txt")},
			{Kind: conv.BlockToolCall, ToolName: "Read", Args: args("file_path", "b.txt")},
		}},
		conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
			{Kind: conv.BlockToolResult, ToolName: "Read", Text: readResult("alpha")},
			{Kind: conv.BlockToolResult, ToolName: "Read", Text: readResult("beta")},
		}},
	)
	r.outcome(t, call, delivered("", "Edit", args("file_path", "b.txt", "old_string", "beta", "new_string", "gamma")))
	rec := r.edits(t, "b.txt")[0]
	require.Equal(t, "beta", *rec.Before)
	require.Equal(t, "gamma", *rec.After)
}

// geminiResult is gemini-cli's functionResponse of a call as the Gemini
// view gives it: the response object as the result's text.
func geminiResult(id, name, key, text string) conv.Message {
	return result(id, name, string(args(key, text)), false)
}

// TestGeminiReplaceAfterKnown: gemini-cli's results are JSON objects
// ({"output": …}, {"error": …}); a read_file result gives the file's text,
// not the object, so a replace of it (with its instruction argument) is
// journalled with before and after known. A write_file that came back as
// {"error": …} changed nothing, and a replace whose result is an error
// object is marked failed.
func TestGeminiReplaceAfterKnown(t *testing.T) {
	r := newRig(t, testJournal(t))
	v1 := "01: one\n02: two\n03: three\n"
	call := callOn(session("", ""),
		user("go"),
		assistantCall("g1", "write_file", args("file_path", "/w/g.txt", "content", v1)),
		geminiResult("g1", "write_file", "output", "Successfully created and wrote to new file: /w/g.txt."),
		assistantCall("g2", "read_file", args("file_path", "/w/g.txt")),
		geminiResult("g2", "read_file", "output", v1),
		assistantCall("g3", "write_file", args("file_path", "/w/g.txt", "content", "broken\n")),
		geminiResult("g3", "write_file", "error", "Permission denied"),
	)
	r.outcome(t, call, delivered("g4", "replace", args("file_path", "/w/g.txt",
		"instruction", "Replace line 2.", "old_string", "02: two\n", "new_string", "02: TWO\n")))
	recs := r.edits(t, "/w/g.txt")
	require.Len(t, recs, 1)
	require.True(t, recs[0].BeforeKnown)
	require.Equal(t, v1, *recs[0].Before, "the read's text, not its response object; the failed write changed nothing")
	require.NotNil(t, recs[0].After, "after known")
	require.Equal(t, "01: one\n02: TWO\n03: three\n", *recs[0].After)

	next := callOn(session("", ""), user("go"),
		assistantCall("g4", "replace", args("file_path", "/w/g.txt", "old_string", "02: two\n", "new_string", "02: TWO\n")),
		result("g4", "replace", `{"error":"Failed to edit, 0 occurrences found for old_string"}`, false))
	r.outcome(t, next)
	recs = r.edits(t, "/w/g.txt")
	require.Equal(t, state.EditFailed, recs[0].Status)
	require.Equal(t, "Failed to edit, 0 occurrences found for old_string", recs[0].Reason)
}

func TestResultText(t *testing.T) {
	for _, c := range []struct {
		in, want string
		isErr    bool
	}{
		{`{"output":"a\nb"}`, "a\nb", false},
		{` {"content":"x"} `, "x", false},
		{`{"error":"no such file"}`, "no such file", true},
		{`{"output":"a","extra":1}`, `{"output":"a","extra":1}`, false},
		{`{"output":3}`, `{"output":3}`, false},
		{`{"other":"a"}`, `{"other":"a"}`, false},
		{`{"output":"a"`, `{"output":"a"`, false},
		{"plain text", "plain text", false},
		{"", "", false},
	} {
		got, isErr := resultText(&conv.Block{Kind: conv.BlockToolResult, Text: c.in})
		require.Equal(t, c.want, got, c.in)
		require.Equal(t, c.isErr, isErr, c.in)
	}
	got, isErr := resultText(&conv.Block{Text: "boom", IsError: true})
	require.Equal(t, "boom", got)
	require.True(t, isErr)
}
