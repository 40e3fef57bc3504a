package console

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/state"
)

func strPtr(s string) *string { return &s }

// seededEdits adds a journal to the seeded session: a rewrite with known
// contents, a hostile path and diff, an edit whose before is unknown, a
// refused and a failed call.
func seededEdits(t *testing.T) (*fakeStore, state.Key) {
	st, key := seeded(t)
	before, after := "func login() {\n\treturn nil\n}\n", "func login() {\n\treturn check()\n}\n"
	_, err := st.AppendEdits(context.Background(), key, 10, []state.EditRecord{
		{At: t0.Add(70e9), Path: "src/login.go", Tool: "Write", Operation: state.EditRewrite, Status: state.EditApplied,
			Chapter: "Research the login flow", Intent: "INT-001", Before: strPtr(before), After: strPtr(after), BeforeKnown: true,
			Diff: journal.Diff("src/login.go", before, after), Size: int64(len(after))},
		{At: t0.Add(80e9), Path: "src/" + hostile + ".go", Tool: "Edit", Operation: state.EditModify, Status: state.EditApplied,
			Chapter: "Fix " + hostile, Diff: "@@\n-old " + hostile + "\n+new\n"},
		{At: t0.Add(90e9), Path: "/etc/hosts", Tool: "Bash", Operation: state.EditDelete, Status: state.EditRefused,
			Chapter: "Fix " + hostile, Reason: "Bash is not allowed"},
		{At: t0.Add(95e9), Path: "src/x.go", Tool: "Write", Operation: state.EditCreate, Status: state.EditFailed,
			Chapter: "Fix " + hostile, Reason: "permission denied", Before: strPtr(""), After: strPtr("x\n"), BeforeKnown: true,
			Diff: journal.Diff("src/x.go", "", "x\n")},
	})
	require.NoError(t, err)
	return st, key
}

// TestEditsFragment: the journal per chapter, diffs classified, statuses
// marked, before unknown said, Revert only where it can be done, and
// everything from the agent escaped.
func TestEditsFragment(t *testing.T) {
	st, _ := seededEdits(t)
	h := newTestHandler(st, "s3cret")
	code, _, _ := get(h, "/console/f/edits/sess-1")
	require.Equal(t, 401, code)
	code, body, _ := get(h, "/console/f/edits/sess-1", "Authorization", "Bearer s3cret")
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "<script>")
	require.NotContains(t, body, "<img")
	require.Contains(t, body, "4 in the journal")

	// Two chapters, in the order of the entries.
	i1, i2 := strings.Index(body, "Research the login flow"), strings.Index(body, "Fix &lt;script&gt;")
	require.True(t, i1 >= 0 && i2 > i1, body)
	require.Contains(t, body, `<span class="dl del">-	return nil</span>`)
	require.Contains(t, body, `<span class="dl add">&#43;	return check()</span>`)
	require.Contains(t, body, `<span class="dl hunk">@@ -1,3 &#43;1,3 @@</span>`)
	require.Contains(t, body, `<span class="dl meta">--- a/src/login.go</span>`)
	require.Equal(t, 1, strings.Count(body, "Before unknown"), "only the entry without its prior content says so")

	entry := func(seq string) string {
		i := strings.Index(body, `data-edit="`+seq+`"`)
		require.True(t, i >= 0, seq)
		rest := body[i:]
		if j := strings.Index(rest[1:], "data-edit="); j >= 0 {
			rest = rest[:j+1]
		}
		return rest
	}
	require.Contains(t, entry("1"), `data-revert="/console/f/edits/sess-1/revert/1?tenant=tenant1"`)
	require.Contains(t, entry("2"), `data-revert=`, "a diff alone can be reverted")
	require.NotContains(t, entry("3"), `data-revert=`)
	require.Contains(t, entry("3"), `class="badge refused"`)
	require.Contains(t, entry("3"), "Bash is not allowed")
	require.Contains(t, entry("3"), "the agent never ran it")
	require.Contains(t, entry("4"), `class="badge failed"`)
	require.Contains(t, entry("4"), "permission denied")

	code, body, _ = get(h, "/console/f/edits/nope", "Authorization", "Bearer s3cret")
	require.Equal(t, 404, code)
	require.Contains(t, body, "No session")
}

// TestRevertFragment: the same patch journal.Reverse gives (what `shepherd
// edits revert N` prints) and the command that applies it.
func TestRevertFragment(t *testing.T) {
	st, key := seededEdits(t)
	h := newTestHandler(st, "s3cret")
	code, _, _ := get(h, "/console/f/edits/sess-1/revert/1")
	require.Equal(t, 401, code)

	code, body, _ := get(h, "/console/f/edits/sess-1/revert/1?tenant=tenant1", "Authorization", "Bearer s3cret")
	require.Equal(t, 200, code, body)
	rec, err := st.Edit(context.Background(), key, 1)
	require.NoError(t, err)
	rv, err := journal.Reverse(rec)
	require.NoError(t, err)
	var want strings.Builder
	lines, _ := diffLines(rv.Patch)
	for _, l := range lines {
		want.WriteString(`<span class="dl ` + l.Kind + `">`)
		want.WriteString(strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;", "+", "&#43;").Replace(l.Text))
		want.WriteString("</span>\n")
	}
	require.Contains(t, body, want.String())
	require.Contains(t, body, "restores its prior content")
	require.Contains(t, body, "shepherd edits revert 1 --session sess-1 --apply")

	code, body, _ = get(h, "/console/f/edits/sess-1/revert/2", "Authorization", "Bearer s3cret")
	require.Equal(t, 200, code)
	require.Contains(t, body, "applies this reverse patch")
	require.NotContains(t, body, "<script>")

	code, body, _ = get(h, "/console/f/edits/sess-1/revert/3", "Authorization", "Bearer s3cret")
	require.Equal(t, 409, code)
	require.Contains(t, body, "was refused")

	code, body, _ = get(h, "/console/f/edits/sess-1/revert/4", "Authorization", "Bearer s3cret")
	require.Equal(t, 200, code)
	require.Contains(t, body, "removes the file")

	code, _, _ = get(h, "/console/f/edits/sess-1/revert/99", "Authorization", "Bearer s3cret")
	require.Equal(t, 404, code)
	code, _, _ = get(h, "/console/f/edits/sess-1/revert/x", "Authorization", "Bearer s3cret")
	require.Equal(t, 404, code)

	// The same id under a second tenant: the command names the tenant.
	_, err = st.Update(context.Background(), state.Key{Tenant: "tenant2", Session: "sess-1"}, func(*state.Session) error { return nil })
	require.NoError(t, err)
	_, body, _ = get(h, "/console/f/edits/sess-1/revert/1?tenant=tenant1", "Authorization", "Bearer s3cret")
	require.Contains(t, body, "shepherd edits revert 1 --session sess-1 --tenant tenant1 --apply")
}

func TestShellQuote(t *testing.T) {
	require.Equal(t, "sess-1", shellQuote("sess-1"))
	require.Equal(t, `'a b'`, shellQuote("a b"))
	require.Equal(t, `'it'\''s;rm'`, shellQuote("it's;rm"))
	require.Equal(t, `''`, shellQuote(""))
}
