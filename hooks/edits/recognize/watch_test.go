package recognize

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func builtinTable() *Table { return NewTable(Builtin()) }

// feedAll feeds args in pieces of size n (whole when n <= 0) and
// returns everything announced, Finish included.
func feedAll(w *Watch, args string, n int) []Started {
	var out []Started
	if n <= 0 {
		n = len(args) + 1
	}
	for i := 0; i < len(args); i += n {
		out = append(out, w.Feed(args[i:min(i+n, len(args))])...)
	}
	return append(out, w.Finish()...)
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestWatchAnnounces(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: docs/new.md\n+# New\n*** Update File: src/a.go\n*** Move to: src/b.go\n@@ func a\n-x\n+y\n*** Delete File: old.txt\n*** End Patch"
	cases := []struct {
		name, tool string
		freeform   bool
		args       string
		want       []Started
	}{
		{"claude write", "Write", false, `{"file_path":"/w/a.txt","content":"hello\nworld"}`, []Started{{"/w/a.txt", OpWrite}}},
		{"content first", "Write", false, `{"content":"x\"file_path\":\"nope\"","file_path":"a.txt"}`, []Started{{"a.txt", OpWrite}}},
		{"escaped path", "Write", false, `{"file_path":"d\u00e9j\u00e0/\ud83d\ude00 \"q\".txt","content":""}`, []Started{{"déjà/😀 \"q\".txt", OpWrite}}},
		{"escaped key", "Write", false, `{"file\u005fpath":"k.txt","content":""}`, []Started{{"k.txt", OpWrite}}},
		{"nested skipped", "Edit", false, `{"x":{"file_path":"no","y":[1,"]}",{"z":"\\"}]},"n":-1.5e3,"t":true,"file_path":"e.go","old_string":"a","new_string":"b"}`, []Started{{"e.go", OpModify}}},
		{"first occurrence wins", "Write", false, `{"file_path":"one","file_path":"two"}`, []Started{{"one", OpWrite}}},
		{"non-string path", "Write", false, `{"file_path":3,"content":"x"}`, nil},
		{"edit creates", "Edit", false, `{"file_path":"n.go","old_string":"","new_string":"package n"}`, []Started{{"n.go", OpWrite}}},
		{"edit old first", "Edit", false, `{"old_string":"x","file_path":"n.go","new_string":"y"}`, []Started{{"n.go", OpModify}}},
		{"edit new first", "replace", false, `{"file_path":"g.go","new_string":"y","old_string":""}`, []Started{{"g.go", OpModify}}},
		{"edit no old", "Edit", false, `{"file_path":"n.go"}`, []Started{{"n.go", OpModify}}},
		{"edit null old", "edit_file", false, `{"file_path":"n.go","old_string":null,"new_string":"y"}`, []Started{{"n.go", OpModify}}},
		{"roo operations", "search_and_replace", false, `{"path":"r.go","operations":[{"search":"","replace":"b"}]}`, []Started{{"r.go", OpModify}}},
		{"multiedit", "MultiEdit", false, `{"file_path":"m.go","edits":[{"old_string":"a","new_string":"b"}]}`, []Started{{"m.go", OpModify}}},
		{"notebook", "NotebookEdit", false, `{"notebook_path":"n.ipynb","new_source":"print(1)"}`, []Started{{"n.ipynb", OpModify}}},
		{"gemini write", "write_file", false, `{"file_path":"g.txt","content":"x"}`, []Started{{"g.txt", OpWrite}}},
		{"roo write", "write_to_file", false, `{"path":"r.txt","content":"x","line_count":1}`, []Started{{"r.txt", OpWrite}}},
		{"roo diff", "apply_diff", false, `{"path":"r.go","diff":"<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE"}`, []Started{{"r.go", OpModify}}},
		{"roo insert", "insert_content", false, `{"path":"i.go","line":0,"content":"z"}`, []Started{{"i.go", OpModify}}},
		{"editor create", "editor", false, `{"command":"create","path":"c.txt","file_text":"x"}`, []Started{{"c.txt", OpWrite}}},
		{"editor path first", "editor", false, `{"path":"c.txt","old_str":"a","new_str":"b","command":"str_replace"}`, []Started{{"c.txt", OpModify}}},
		{"editor view", "editor", false, `{"command":"view","path":"c.txt"}`, nil},
		{"cline editor replace", "editor", false, `{"path":"/w/c.txt","old_text":"a","new_text":"b"}`, []Started{{"/w/c.txt", OpModify}}},
		{"cline editor create", "editor", false, `{"path":"/w/c.txt","old_text":null,"new_text":"b"}`, []Started{{"/w/c.txt", OpWrite}}},
		{"cline editor empty old", "editor", false, `{"path":"/w/c.txt","old_text":"","new_text":"b"}`, []Started{{"/w/c.txt", OpWrite}}},
		{"cline editor insert first", "editor", false, `{"insert_line":3,"path":"/w/c.txt","new_text":"b"}`, []Started{{"/w/c.txt", OpModify}}},
		{"cline editor path last", "editor", false, `{"old_text":"a","new_text":"b","path":"/w/c.txt"}`, []Started{{"/w/c.txt", OpModify}}},
		{"cline editor path only", "editor", false, `{"path":"/w/c.txt"}`, nil},
		{"patch json", "apply_patch", false, mustJSON(t, map[string]string{"input": patch}), []Started{{"docs/new.md", OpCreate}, {"src/a.go", OpModify}, {"old.txt", OpDelete}}},
		{"patch key first given", "apply_patch", false, `{"patch":"*** Delete File: p","input":"*** Delete File: i"}`, []Started{{"p", OpDelete}}},
		{"patch freeform", "apply_patch", true, patch, []Started{{"docs/new.md", OpCreate}, {"src/a.go", OpModify}, {"old.txt", OpDelete}}},
		{"patch last line", "apply_patch", true, "*** Begin Patch\n  *** Delete File: z.txt", []Started{{"z.txt", OpDelete}}},
		{"patch repeated path", "apply_patch", true, "*** Update File: a\n@@\n-x\n+y\n*** Update File: a\n@@\n-p\n+q\n", []Started{{"a", OpModify}}},
		{"patch content header", "apply_patch", true, "*** Add File: a\n+*** Add File: b\n", []Started{{"a", OpCreate}}},
		{"codex shell", "shell", false, `{"command":["bash","-lc","cat > out.txt <<'EOF'\nhi\nEOF\nrm -f tmp.log"],"workdir":"sub"}`, []Started{{"sub/out.txt", OpWrite}, {"sub/tmp.log", OpDelete}}},
		{"codex shell apply_patch", "shell", false, mustJSON(t, map[string]any{"command": []string{"apply_patch", patch}}), []Started{{"docs/new.md", OpCreate}, {"src/a.go", OpModify}, {"old.txt", OpDelete}}},
		{"exec_command", "exec_command", false, `{"cmd":"echo x >> log.txt"}`, []Started{{"log.txt", OpWrite}}},
		{"local_shell", "local_shell", false, `{"action":{"type":"exec","command":["touch","t"],"working_directory":"/w"}}`, []Started{{"/w/t", OpWrite}}},
		{"bash read only", "Bash", false, `{"command":"ls -la"}`, nil},
		{"not an object", "Write", false, `["file_path","x"]`, nil},
	}
	tab := builtinTable()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for n := 0; n <= len(c.args); n++ {
				w := tab.Watch(c.tool, c.freeform)
				require.NotNil(t, w)
				got := feedAll(w, c.args, n)
				require.Equal(t, c.want, got, "pieces of %d", n)
			}
		})
	}
}

// TestWatchEarly: the path is announced by the fragment that completes
// it, long before the content ends.
func TestWatchEarly(t *testing.T) {
	w := builtinTable().Watch("Write", false)
	require.Nil(t, w.Feed(`{"file_path":"/w/a`))
	require.Equal(t, []Started{{"/w/a.txt", OpWrite}}, w.Feed(`.txt","content":"`))
	for i := 0; i < 100; i++ {
		require.Nil(t, w.Feed(strings.Repeat(`line \"x\"\n`, 10)))
	}
	require.Nil(t, w.Feed(`"}`))
	require.Nil(t, w.Finish())
	require.Nil(t, w.Feed(`{"file_path":"again"}`))
}

func TestWatchNil(t *testing.T) {
	tab := builtinTable()
	require.Nil(t, tab.Watch("Read", false))
	require.Nil(t, tab.Watch("Unknown", false))
	require.Nil(t, tab.Watch("Write", true))
	var w *Watch
	require.Nil(t, w.Feed("x"))
	require.Nil(t, w.Finish())
	var nt *Table
	require.False(t, nt.Knows("Write"))
	require.Nil(t, nt.Watch("Write", false))
}

// TestWatchEditEarly: an Edit is announced by the first byte of its old
// text, before its new text streams.
func TestWatchEditEarly(t *testing.T) {
	w := builtinTable().Watch("Edit", false)
	require.Nil(t, w.Feed(`{"file_path":"a.go","old_string":"`))
	require.Equal(t, []Started{{"a.go", OpModify}}, w.Feed(`f`))
	w = builtinTable().Watch("Edit", false)
	require.Nil(t, w.Feed(`{"file_path":"a.go","old_string":`))
	require.Equal(t, []Started{{"a.go", OpWrite}}, w.Feed(`"",`))
}

func TestWatchNestedPath(t *testing.T) {
	tab := NewTable([]Rule{{Tool: "save", Kind: KindWrite, PathArg: "target.file", ContentArg: "body"}})
	w := tab.Watch("save", false)
	require.Nil(t, w.Feed(`{"target":{"file":"deep.txt"},`))
	require.Nil(t, w.Feed(`"body":"x"}`))
	require.Equal(t, []Started{{"deep.txt", OpWrite}}, w.Finish())
}
