package console_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/state"
)

const (
	loginBefore = "func Check(pw string) bool {\n\treturn true\n}\n"
	loginAfter  = "func Check(pw string) bool {\n\treturn pw != \"\"\n}\n"
)

// journalEdit appends rec to the session's edit journal as the edits
// feature does, and announces it on the feed with edit.finished.
func journalEdit(t *testing.T, s *shepherd, key state.Key, rec state.EditRecord) state.EditRecord {
	t.Helper()
	j, ok := s.Store.(state.EditJournal)
	require.True(t, ok, "the store keeps an edit journal")
	stored, err := j.AppendEdits(context.Background(), key, 10, []state.EditRecord{rec})
	require.NoError(t, err)
	el, ok := s.Store.(state.EventLog)
	require.True(t, ok)
	b, err := json.Marshal(events.Event{Type: events.EditFinished, At: time.Now(), Session: key.Session, Tenant: key.Tenant,
		Data: map[string]any{"tool": rec.Tool, "path": rec.Path, "operation": rec.Operation, "chapter": rec.Chapter, "size": rec.Size}})
	require.NoError(t, err)
	require.NoError(t, el.AppendEvents(context.Background(), key, [][]byte{b}))
	return stored[0]
}

// TestConsoleEditsRevert: a person sees an edit under its chapter with its
// diff, a new edit appears live under a new chapter, and Revert shows the
// reverse patch (journal.Reverse's, what `shepherd edits revert` prints)
// with the command that applies it.
func TestConsoleEditsRevert(t *testing.T) {
	s := startShepherd(t, shepherdOptions{})
	a := s.agent(t, "console-edits")
	firstTurn(t, s, a) // chapter "Harden the login form"
	list, err := s.Store.List(context.Background(), "", 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	key := state.Key{Tenant: list[0].Tenant, Session: "console-edits"}

	first := journalEdit(t, s, key, state.EditRecord{Path: "src/login.go", Tool: "Write", Operation: state.EditRewrite,
		Status: state.EditApplied, Chapter: "Harden the login form", Intent: "INT-001",
		Before: ptr(loginBefore), After: ptr(loginAfter), BeforeKnown: true, Diff: journal.Diff("src/login.go", loginBefore, loginAfter)})

	ctx := newTab(t, 40*time.Second)
	run(t, ctx, "open the session", chromedp.Navigate(s.Admin+"/console/sessions/console-edits"))
	giveToken(t, ctx, adminToken)
	text := waitText(t, ctx, "#edits", "Harden the login form", "src/login.go", "rewrite", "applied", "Write")
	require.Contains(t, text, "-\treturn true")
	require.Contains(t, text, "+\treturn pw != \"\"")
	// Removed and added lines are styled apart.
	require.NotEqual(t,
		eval[string](t, ctx, `getComputedStyle(document.querySelector('#edits .diff .del')).backgroundColor`),
		eval[string](t, ctx, `getComputedStyle(document.querySelector('#edits .diff .add')).backgroundColor`))
	waitLive(t, ctx)
	eval[bool](t, ctx, `window.notReloaded = true`)

	// A refused edit under a new chapter appears live, marked, with no
	// Revert button.
	journalEdit(t, s, key, state.EditRecord{Path: "/etc/hosts", Tool: "Bash", Operation: state.EditDelete,
		Status: state.EditRefused, Reason: "Bash is not allowed under INT-001", Chapter: "Clean up"})
	text = waitText(t, ctx, "#edits", "Clean up", "/etc/hosts", "refused", "Bash is not allowed under INT-001")
	require.Contains(t, text, "the agent never ran it")
	require.True(t, eval[bool](t, ctx, `window.notReloaded === true`), "the page was not reloaded")
	require.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#edits button[data-revert]').length`))

	// Revert shows the reverse patch and the command line.
	run(t, ctx, "click Revert", chromedp.Click(sel(`#edits li[data-edit="%d"] button.revert`, first.Seq), chromedp.NodeVisible))
	panel := waitText(t, ctx, `#revert-1`, "restores its prior content", "shepherd edits revert 1 --session console-edits")
	rv, err := journal.Reverse(first)
	require.NoError(t, err)
	got := eval[string](t, ctx, `Array.from(document.querySelectorAll('#revert-1 .diff .dl')).map(function (l) { return l.textContent + '\n'; }).join('')`)
	require.Equal(t, rv.Patch, got, "the page shows journal.Reverse's patch")
	require.Contains(t, panel, "shepherd edits revert 1 --session console-edits --apply")
	screenshot(t, ctx, "session-edits")
	elementShot(t, ctx, "#edits", "edits") // docs/img/console-edits.png

	// The open panel survives a live refresh of the journal.
	journalEdit(t, s, key, state.EditRecord{Path: "src/new.go", Tool: "Write", Operation: state.EditCreate,
		Status: state.EditApplied, Chapter: "Clean up", Before: ptr(""), After: ptr("package src\n"), BeforeKnown: true,
		Diff: journal.Diff("src/new.go", "", "package src\n")})
	waitText(t, ctx, "#edits", "src/new.go")
	waitText(t, ctx, `#revert-1`, "restores its prior content")
}

func ptr(s string) *string { return &s }

// elementShot saves the element sel as PNG under name in the artifacts
// directory.
func elementShot(t *testing.T, ctx context.Context, sel, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(artifactsDir(t), name+".png")
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot: %s", p)
}
