package recognize

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func sp(s string) *string { return &s }

func TestEdits(t *testing.T) {
	cases := []struct {
		name, tool string
		freeform   bool
		args       string
		want       []Edit
	}{
		{"claude write", "Write", false, `{"file_path":"a.txt","content":"hi\n"}`,
			[]Edit{{Path: "a.txt", Op: OpWrite, Content: sp("hi\n"), Size: 3}}},
		{"claude edit", "Edit", false, `{"file_path":"a.go","old_string":"x","new_string":"yy","replace_all":true}`,
			[]Edit{{Path: "a.go", Op: OpModify, Changes: []Change{{Old: "x", New: "yy", All: true}}, Size: 2}}},
		{"claude edit creates", "Edit", false, `{"file_path":"n.go","old_string":"","new_string":"package n\n"}`,
			[]Edit{{Path: "n.go", Op: OpWrite, Content: sp("package n\n"), Size: 10}}},
		{"multiedit", "MultiEdit", false, `{"file_path":"m.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d","replace_all":true}]}`,
			[]Edit{{Path: "m.go", Op: OpModify, Changes: []Change{{Old: "a", New: "b"}, {Old: "c", New: "d", All: true}}, Size: 2}}},
		{"multiedit creates", "MultiEdit", false, `{"file_path":"m.go","edits":[{"old_string":"","new_string":"a b a"},{"old_string":"b","new_string":"c"}]}`,
			[]Edit{{Path: "m.go", Op: OpWrite, Content: sp("a c a"), Size: 6}}},
		{"notebook", "NotebookEdit", false, `{"notebook_path":"n.ipynb","cell_id":"abc","new_source":"x=1","edit_mode":"insert","cell_type":"code"}`,
			[]Edit{{Path: "n.ipynb", Op: OpModify, Cell: &NotebookCell{ID: "abc", Source: "x=1", Type: "code", Mode: "insert"}, Size: 3}}},
		{"gemini replace", "replace", false, `{"file_path":"/w/g.go","old_string":"a","new_string":"b","expected_replacements":3}`,
			[]Edit{{Path: "/w/g.go", Op: OpModify, Changes: []Change{{Old: "a", New: "b", Count: 3}}, Size: 1}}},
		{"roo search_and_replace", "search_and_replace", false, `{"path":"r.go","search":"a.","replace":"b","use_regex":true,"start_line":2,"end_line":"5"}`,
			[]Edit{{Path: "r.go", Op: OpModify, Changes: []Change{{Old: "a.", New: "b", All: true, Regex: true, From: 2, To: 5}}, Size: 1}}},
		{"roo search_and_replace operations", "search_and_replace", false, `{"path":"r.go","operations":[{"search":"a","replace":"b"},{"search":"c","replace":"d","ignore_case":true}]}`,
			[]Edit{{Path: "r.go", Op: OpModify, Changes: []Change{{Old: "a", New: "b", All: true}, {Old: "c", New: "d", All: true, IgnoreCase: true}}, Size: 2}}},
		{"roo insert", "insert_content", false, `{"path":"i.go","line":3,"content":"x\ny"}`,
			[]Edit{{Path: "i.go", Op: OpModify, Changes: []Change{{New: "x\ny", Line: 3}}, Size: 3}}},
		{"roo apply_diff", "apply_diff", false, `{"path":"d.go","diff":"<<<<<<< SEARCH\n:start_line:4\n-------\nold\n=======\nnew\n>>>>>>> REPLACE\n"}`,
			[]Edit{{Path: "d.go", Op: OpModify, Changes: []Change{{Old: "old\n", New: "new\n", Line: 4}}, Size: 4}}},
		{"cline replace_in_file", "replace_in_file", false, `{"path":"c.go","diff":"------- SEARCH\na\nb\n=======\n+++++++ REPLACE\n------- SEARCH\n=======\nz\n+++++++ REPLACE"}`,
			[]Edit{{Path: "c.go", Op: OpModify, Changes: []Change{{Old: "a\nb\n", New: "", Ordered: true}, {Old: "", New: "z\n", Ordered: true}}, Size: 2}}},
		{"cline whole file", "replace_in_file", false, `{"path":"c.go","diff":"------- SEARCH\n=======\nnew\nold\n+++++++ REPLACE"}`,
			[]Edit{{Path: "c.go", Op: OpWrite, Content: sp("new\nold\n"), Size: 8}}},
		{"editor create", "editor", false, `{"command":"create","path":"e.txt","file_text":"t"}`,
			[]Edit{{Path: "e.txt", Op: OpWrite, Content: sp("t"), Size: 1}}},
		{"editor str_replace", "editor", false, `{"command":"str_replace","path":"e.txt","old_str":"a","new_str":"b"}`,
			[]Edit{{Path: "e.txt", Op: OpModify, Changes: []Change{{Old: "a", New: "b"}}, Size: 1}}},
		{"editor insert", "editor", false, `{"command":"insert","path":"e.txt","insert_line":0,"new_str":"top"}`,
			[]Edit{{Path: "e.txt", Op: OpModify, Changes: []Change{{New: "top", Line: 1}}, Size: 3}}},
		{"editor insert_text", "str_replace_based_edit_tool", false, `{"command":"insert","path":"e.txt","insert_line":2,"insert_text":"mid"}`,
			[]Edit{{Path: "e.txt", Op: OpModify, Changes: []Change{{New: "mid", Line: 3}}, Size: 3}}},
		{"editor view", "editor", false, `{"command":"view","path":"e.txt"}`, nil},
		{"cline editor replace", "editor", false, `{"path":"/w/e.txt","old_text":"a","new_text":"b"}`,
			[]Edit{{Path: "/w/e.txt", Op: OpModify, Changes: []Change{{Old: "a", New: "b"}}, Size: 1}}},
		{"cline editor create", "editor", false, `{"path":"/w/e.txt","old_text":null,"new_text":"all","insert_line":null}`,
			[]Edit{{Path: "/w/e.txt", Op: OpWrite, Content: sp("all"), Size: 3}}},
		{"cline editor insert", "editor", false, `{"path":"/w/e.txt","new_text":"x","insert_line":"4"}`,
			[]Edit{{Path: "/w/e.txt", Op: OpModify, Changes: []Change{{New: "x", Line: 4}}, Size: 1}}},
		{"read", "Read", false, `{"file_path":"e.txt"}`, nil},
		{"unknown", "Nope", false, `{}`, nil},
		{"patch", "apply_patch", true, "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-x\n+y\n*** Delete File: d.txt\n*** End Patch\n",
			[]Edit{
				{Path: "a.txt", Op: OpCreate, Content: sp("one\ntwo\n"), Patch: "*** Add File: a.txt\n+one\n+two\n", Size: 30},
				{Path: "b.txt", Op: OpModify, MoveTo: "c.txt", Patch: "*** Update File: b.txt\n*** Move to: c.txt\n@@\n-x\n+y\n", Size: 51},
				{Path: "d.txt", Op: OpDelete, Patch: "*** Delete File: d.txt\n", Size: 23},
			}},
		{"alternatives: first given", "apply_patch", false, `{"patch":"*** Delete File: p","input":"*** Delete File: i"}`,
			[]Edit{{Path: "p", Op: OpDelete, Patch: "*** Delete File: p", Size: 18}}},
		{"shell", "Bash", false, `{"command":"cd src && sed -i s/a/b/ x.go && rm y.go"}`,
			[]Edit{{Path: "src/x.go", Op: OpWrite}, {Path: "src/y.go", Op: OpDelete}}},
		{"cline run_commands", "run_commands", false, `{"commands":["echo a > a","rm b"]}`,
			[]Edit{{Path: "a", Op: OpWrite}, {Path: "b", Op: OpDelete}}},
	}
	tab := builtinTable()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tab.Edits(c.tool, []byte(c.args), c.freeform)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestEditsErrors(t *testing.T) {
	cases := []struct{ tool, args, want string }{
		{"Write", `{"file_path":"a"`, "not valid JSON"},
		{"Write", `{"content":"x"}`, `"file_path" is missing`},
		{"Write", `{"file_path":"","content":"x"}`, `"file_path" is empty`},
		{"Write", `{"file_path":"a"}`, `"content" is missing`},
		{"Write", `{"file_path":1,"content":"x"}`, `"file_path" is not a string`},
		{"MultiEdit", `{"file_path":"a","edits":[{"old_string":"a"}]}`, `edits element 0: argument "new_string" is missing`},
		{"MultiEdit", `{"file_path":"a"}`, `"edits" is missing`},
		{"apply_diff", `{"path":"a","diff":"<<<<<<< SEARCH\nx\n"}`, "not closed"},
		{"apply_diff", `{"path":"a","diff":"nothing"}`, "no SEARCH/REPLACE block"},
		{"apply_patch", `{"input":"hello"}`, "no file header"},
		{"apply_patch", `{"input":"*** Add File: a\nno plus\n"}`, "does not start with +"},
		{"insert_content", `{"path":"a","line":-1,"content":"x"}`, "not a non-negative integer"},
		{"editor", `{"command":"str_replace","path":"a","old_str":"","new_str":"x"}`, `"old_text,old_str" is empty`},
		{"shell", `{"command":"ls"}`, "not an array"},
		{"editor", `{"path":"a","new_text":"x","insert_line":0}`, "not a line number from 1"},
		{"editor", `{"path":"a","old_text":"x"}`, `"new_text,new_str,insert_text" is missing`},
	}
	tab := builtinTable()
	for _, c := range cases {
		_, err := tab.Edits(c.tool, []byte(c.args), false)
		require.ErrorContains(t, err, c.want, c.tool+" "+c.args)
		require.ErrorContains(t, err, c.tool+":")
	}
	_, err := tab.Edits("Write", []byte("x"), true)
	require.ErrorContains(t, err, "free-form")

	// A shell command analysed in part returns what it found.
	got, err := tab.Edits("Bash", []byte(`{"command":"echo a > a; eval \"$X\""}`), false)
	require.True(t, errors.Is(err, ErrPartial), "%v", err)
	require.Equal(t, []Edit{{Path: "a", Op: OpWrite}}, got)
}
