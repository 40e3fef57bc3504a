package recognize

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRules(t *testing.T) {
	rules, err := ParseRules([]string{
		"write_note kind=write path=note_path content=body",
		"patch_files kind=patch input=patch",
		"run kind=shell command=argv argv=true dir=cwd,dir",
		"Write kind=edit path=target",
		"subst kind=edit path=f old=from new=to replace_all=true",
		"cat_file kind=read path=file format=plain",
	})
	require.NoError(t, err)
	require.Equal(t, Rule{Tool: "write_note", Kind: KindWrite, PathArg: "note_path", ContentArg: "body"}, rules[0])
	require.Equal(t, Rule{Tool: "run", Kind: KindShell, CommandArg: "argv", Argv: true, DirArg: "cwd,dir"}, rules[2])
	require.True(t, rules[4].All)

	// Configured rules after the built-in ones override them.
	tab := NewTable(append(Builtin(), rules...))
	r, ok := tab.Rule("Write")
	require.True(t, ok)
	require.Equal(t, KindEdit, r.Kind)
	require.Equal(t, "target", r.PathArg)
	require.Equal(t, "old_string", r.OldArg, "defaults of the kind fill the rest")

	w := tab.Watch("write_note", false)
	require.Equal(t, []Started{{"n.md", OpWrite}}, feedAll(w, `{"body":"x","note_path":"n.md"}`, 1))
	edits, err := tab.Edits("write_note", []byte(`{"body":"x","note_path":"n.md"}`), false)
	require.NoError(t, err)
	require.Equal(t, []Edit{{Path: "n.md", Op: OpWrite, Content: sp("x"), Size: 1}}, edits)

	edits, err = tab.Edits("run", []byte(`{"argv":["touch","t"],"dir":"sub"}`), false)
	require.NoError(t, err)
	require.Equal(t, []Edit{{Path: "sub/t", Op: OpWrite}}, edits)

	edits, err = tab.Edits("subst", []byte(`{"f":"a","from":"x","to":"y"}`), false)
	require.NoError(t, err)
	require.Equal(t, []Change{{Old: "x", New: "y", All: true}}, edits[0].Changes)

	edits, err = tab.Edits("patch_files", []byte(`{"patch":"*** Delete File: gone"}`), false)
	require.NoError(t, err)
	require.Equal(t, "gone", edits[0].Path)

	p, c, ok := tab.Read("cat_file", []byte(`{"file":"x"}`), "text")
	require.True(t, ok)
	require.Equal(t, [2]string{"x", "text"}, [2]string{p, c})
}

func TestParseRulesErrors(t *testing.T) {
	_, err := ParseRules([]string{
		"ok kind=write",
		"nokind path=x",
		"bad kind=teleport",
		"dup kind=write path=a path=b",
		"weird kind=write colour=red",
		"empty kind=write path=",
		"dots kind=write path=a..b",
		"flag kind=shell argv=maybe",
		"fmt kind=read format=xml",
		"kind=write",
		"lonely",
	})
	require.Error(t, err)
	for _, want := range []string{
		`"nokind path=x": kind is missing`, `"bad kind=teleport": unknown kind "teleport"`,
		`"dup kind=write path=a path=b": path is set twice`, `"weird kind=write colour=red": unknown key "colour"`,
		`"empty kind=write path=": "path=": want key=value`, `"dots kind=write path=a..b"`,
		`"flag kind=shell argv=maybe": argv`, `"fmt kind=read format=xml"`, `"kind=write"`, `"lonely"`,
	} {
		require.ErrorContains(t, err, want)
	}
	require.NotContains(t, err.Error(), `"ok kind=write"`)
}

func TestBuiltinComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Builtin() {
		require.False(t, seen[r.Tool], "tool %s listed twice", r.Tool)
		seen[r.Tool] = true
		_, known := kindDefaults[r.Kind]
		require.True(t, known, r.Tool)
	}
	for _, tool := range []string{
		"Write", "Edit", "MultiEdit", "NotebookEdit", "Read", "Bash", "apply_patch", "shell", "exec_command",
		"shell_command", "local_shell", "write_file", "replace", "read_file", "run_shell_command", "write_to_file",
		"apply_diff", "insert_content", "search_and_replace", "replace_in_file", "editor", "run_commands",
	} {
		require.True(t, seen[tool], tool)
	}
}
