package recognize

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/journal"
)

func TestApplyChanges(t *testing.T) {
	const before = "alpha\nbeta\ngamma\nbeta\n"
	cases := []struct {
		name string
		chs  []Change
		want string
		err  string
	}{
		{"once", []Change{{Old: "alpha", New: "ALPHA"}}, "ALPHA\nbeta\ngamma\nbeta\n", ""},
		{"all", []Change{{Old: "beta", New: "B", All: true}}, "alpha\nB\ngamma\nB\n", ""},
		{"count ok", []Change{{Old: "beta", New: "B", Count: 2}}, "alpha\nB\ngamma\nB\n", ""},
		{"count wrong", []Change{{Old: "beta", New: "B", Count: 3}}, "", "occurs 2 times, not 3"},
		{"ambiguous", []Change{{Old: "beta", New: "B"}}, "", "occurs 2 times"},
		{"line hint", []Change{{Old: "beta\n", New: "B\n", Line: 4}}, "alpha\nbeta\ngamma\nB\n", ""},
		{"line hint first", []Change{{Old: "beta\n", New: "B\n", Line: 1}}, "alpha\nB\ngamma\nbeta\n", ""},
		{"missing", []Change{{Old: "delta", New: "x"}}, "", "not in the file"},
		{"trimmed near line", []Change{{Old: " beta \n", New: "B\n", Line: 4}}, "alpha\nbeta\ngamma\nB\n", ""},
		{"trimmed missing", []Change{{Old: "delta\n", New: "B\n", Line: 3}}, "", "not in the file"},
		{"in order", []Change{{Old: "alpha", New: "x"}, {Old: "x\nbeta", New: "y"}}, "y\ngamma\nbeta\n", ""},
		{"second fails", []Change{{Old: "alpha", New: "x"}, {Old: "alpha", New: "y"}}, "", "change 2"},
		{"insert before", []Change{{New: "new", Line: 2}}, "alpha\nnew\nbeta\ngamma\nbeta\n", ""},
		{"insert top", []Change{{New: "top\n", Line: 1}}, "top\nalpha\nbeta\ngamma\nbeta\n", ""},
		{"append", []Change{{New: "end"}}, before + "end\n", ""},
		{"append past end", []Change{{New: "end", Line: 99}}, before + "end\n", ""},
		{"regex", []Change{{Old: `^b(e)ta$`, New: "B$1", Regex: true}}, "alpha\nBe\ngamma\nBe\n", ""},
		{"ignore case", []Change{{Old: "ALPHA", New: "a", IgnoreCase: true}}, "a\nbeta\ngamma\nbeta\n", ""},
		{"line range", []Change{{Old: "beta", New: "B", From: 3, To: 4}}, "alpha\nbeta\ngamma\nB\n", ""},
		{"literal in range", []Change{{Old: "a.", New: "!", From: 1, To: 1}}, before, "not in the file"},
		{"bad regex", []Change{{Old: "(", New: "", Regex: true}}, "", "pattern"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Edit{Path: "f", Op: OpModify, Changes: c.chs}.Apply(before)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestApplyOrdered(t *testing.T) {
	const before = "x := 1\nif x {\n    x++\n}\nx := 1\n"
	cases := []struct {
		name string
		chs  []Change
		want string
		err  string
	}{
		{"duplicates in order", []Change{{Old: "x := 1\n", New: "a\n"}, {Old: "x := 1\n", New: "b\n"}}, "a\nif x {\n    x++\n}\nb\n", ""},
		{"out of order, as a last resort", []Change{{Old: "}\n", New: "]\n"}, {Old: "if x", New: "y"}}, "x := 1\ny {\n    x++\n]\nx := 1\n", ""},
		{"nowhere", []Change{{Old: "while", New: "y"}}, "", "not in the file"},
		{"anchor lines", []Change{{Old: "if x {\n  x--\n}\n", New: "z\n"}}, "x := 1\nz\nx := 1\n", ""},
		{"trimmed lines", []Change{{Old: "if x {\n  x++\n}\n", New: "done\n"}}, "x := 1\ndone\nx := 1\n", ""},
		{"trimmed last line without newline", []Change{{Old: "  x++\n }", New: "z"}}, "x := 1\nif x {\nz\nx := 1\n", ""},
		{"empty replaces all", []Change{{Old: "", New: "all\n"}}, "all\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.chs {
				c.chs[i].Ordered = true
			}
			got, err := Edit{Path: "f", Op: OpModify, Changes: c.chs}.Apply(before)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestApplyOthers(t *testing.T) {
	got, err := Edit{Op: OpWrite, Content: sp("x")}.Apply("old")
	require.NoError(t, err)
	require.Equal(t, "x", got)
	got, err = Edit{Op: OpDelete}.Apply("old")
	require.NoError(t, err)
	require.Equal(t, "", got)
	_, err = Edit{Op: OpModify, Cell: &NotebookCell{ID: "a"}}.Apply("{}")
	require.True(t, errors.Is(err, ErrUnsupported))
	_, err = Edit{Op: OpModify}.Apply("x")
	require.True(t, errors.Is(err, ErrUnsupported))
	require.Equal(t, "new", insertLines("", "new", 3))
	require.Equal(t, "a\nb\n", insertLines("a", "b", 0))
}

func TestApplyPatch(t *testing.T) {
	before := "package a\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	cases := []struct {
		name, patch, want, err string
	}{
		{"context line", "*** Update File: a.go\n@@ func b() {\n-\treturn 1\n+\treturn 2\n", strings.Replace(before, "b() {\n\treturn 1", "b() {\n\treturn 2", 1), ""},
		{"first chunk without @@", "*** Update File: a.go\n func a() {\n-\treturn 1\n+\treturn 3\n", strings.Replace(before, "return 1", "return 3", 1), ""},
		{"two chunks", "*** Update File: a.go\n@@\n-package a\n+package z\n@@ func b() {\n-\treturn 1\n+\treturn 2\n",
			strings.Replace(strings.Replace(before, "package a", "package z", 1), "b() {\n\treturn 1", "b() {\n\treturn 2", 1), ""},
		{"trailing spaces tolerated", "*** Update File: a.go\n@@\n-package a   \n+package q\n", strings.Replace(before, "package a", "package q", 1), ""},
		{"end of file", "*** Update File: a.go\n@@\n }\n+// end\n*** End of File\n", before + "// end\n", ""},
		{"pure addition appends", "*** Update File: a.go\n@@\n+// tail\n", before + "// tail\n", ""},
		{"not found", "*** Update File: a.go\n@@\n-nope\n+x\n", "", "not found"},
		{"context not found", "*** Update File: a.go\n@@ func c() {\n-x\n+y\n", "", "context line"},
		{"bad line", "*** Update File: a.go\n@@\n?x\n", "", "not a context"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edits, err := patchEdits(c.patch)
			require.NoError(t, err)
			got, err := edits[0].Apply(before)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// applyUnified applies a unified diff to s by finding each hunk's old
// lines (line-anchored, exactly once), as journal's revert does.
func applyUnified(s, diff string) (string, error) {
	lines := strings.SplitAfter(diff, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "@@") {
			continue
		}
		var after, n int // "@@ -after,0 …": a pure addition after that line
		pure, _ := fmt.Sscanf(lines[i], "@@ -%d,%d ", &after, &n)
		pure2 := pure == 2 && n == 0
		var old, neu strings.Builder
		for i++; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@"); i++ {
			l := lines[i]
			switch l[0] {
			case ' ':
				old.WriteString(l[1:])
				neu.WriteString(l[1:])
			case '-':
				old.WriteString(l[1:])
			case '+':
				neu.WriteString(l[1:])
			}
		}
		i--
		o := old.String()
		switch n := strings.Count("\n"+s, "\n"+o); {
		case o == "" && pure2:
			at := 0
			for k := 0; k < after; k++ {
				at += strings.IndexByte(s[at:], '\n') + 1
			}
			s = s[:at] + neu.String() + s[at:]
		case o == "":
			s += neu.String()
		case n != 1:
			return "", fmt.Errorf("hunk text found %d times", n)
		default:
			at := strings.Index("\n"+s, "\n"+o)
			s = s[:at] + neu.String() + s[at+len(o):]
		}
	}
	return s, nil
}

// TestCallDiffRoundTrip: the diff told by the call alone, applied to the
// content before, gives what Apply gives; reversed, applied to that, gives
// the content before back.
func TestCallDiffRoundTrip(t *testing.T) {
	before := "one\ntwo\nthree\nfour\nfive\n"
	tab := builtinTable()
	cases := []struct{ tool, args string }{
		{"Edit", `{"file_path":"f.txt","old_string":"two\nthree\n","new_string":"2\n3\n3.5\n"}`},
		{"MultiEdit", `{"file_path":"f.txt","edits":[{"old_string":"one\n","new_string":"1\n"},{"old_string":"five\n","new_string":"5\n"}]}`},
		{"apply_diff", `{"path":"f.txt","diff":"<<<<<<< SEARCH\n:start_line:4\n-------\nfour\n=======\nFOUR\nfour and a half\n>>>>>>> REPLACE"}`},
		{"insert_content", `{"path":"f.txt","line":3,"content":"two and a half"}`},
		{"editor", `{"command":"insert","path":"f.txt","insert_line":5,"new_str":"six"}`},
		{"apply_patch", `{"input":"*** Begin Patch\n*** Update File: f.txt\n@@\n two\n-three\n+THREE\n four\n*** End Patch"}`},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			edits, err := tab.Edits(c.tool, []byte(c.args), false)
			require.NoError(t, err)
			require.Len(t, edits, 1)
			e := edits[0]
			after, err := e.Apply(before)
			require.NoError(t, err)
			d := e.CallDiff()
			require.True(t, strings.HasPrefix(d, "--- a/f.txt\n+++ b/f.txt\n@@ "), d)
			viaDiff, err := applyUnified(before, d)
			require.NoError(t, err, d)
			require.Equal(t, after, viaDiff, d)
			back, err := applyUnified(after, journal.ReverseDiff(d))
			require.NoError(t, err)
			require.Equal(t, before, back)
		})
	}
}

// A pure deletion's diff has no context: its reverse cannot be placed
// (journal refuses it) but it says what went.
func TestCallDiffDeletion(t *testing.T) {
	e := Edit{Path: "f", Op: OpModify, Changes: []Change{{Old: "gone\n"}}}
	require.Equal(t, "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-gone\n", e.CallDiff())
}

func TestCallDiffNone(t *testing.T) {
	require.Equal(t, "", Edit{Path: "a", Op: OpWrite, Content: sp("x")}.CallDiff())
	require.Equal(t, "", Edit{Path: "a", Op: OpDelete}.CallDiff())
	require.Equal(t, "", Edit{Path: "a", Op: OpModify, Changes: []Change{{Old: "a", New: "b", Regex: true}}}.CallDiff())
	require.Equal(t, journal.Diff("a", "", "x\n"), Edit{Path: "a", Op: OpCreate, Content: sp("x\n")}.CallDiff())
}
