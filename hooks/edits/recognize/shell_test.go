package recognize

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Codex may run apply_patch through its shell tools; the patch's files
// are then read from the patch.
func TestShellApplyPatch(t *testing.T) {
	patch := "*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n@@\n-x\n+y\n*** End Patch"
	tab := builtinTable()
	cases := []struct{ name, tool, args string }{
		{"argv", "shell", mustJSON(t, map[string]any{"command": []string{"apply_patch", patch}, "workdir": "sub"})},
		{"heredoc", "shell", mustJSON(t, map[string]any{"command": []string{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "\nEOF\n"}, "workdir": "sub"})},
		{"cd heredoc", "shell_command", mustJSON(t, map[string]any{"command": "cd sub && apply_patch <<'EOF'\n" + patch + "\nEOF"})},
		{"exec_command", "exec_command", mustJSON(t, map[string]any{"cmd": "apply_patch <<EOF\n" + patch + "\nEOF", "workdir": "sub"})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edits, err := tab.Edits(c.tool, []byte(c.args), false)
			require.NoError(t, err)
			require.Len(t, edits, 1)
			require.Equal(t, "sub/a.go", edits[0].Path)
			require.Equal(t, "sub/b.go", edits[0].MoveTo)
			require.Equal(t, OpModify, edits[0].Op)
			after, err := edits[0].Apply("x\n")
			require.NoError(t, err)
			require.Equal(t, "y\n", after)
			require.Equal(t, []Started{{"sub/a.go", OpModify}}, feedAll(tab.Watch(c.tool, false), c.args, 7))
		})
	}
}

func TestShellTargets(t *testing.T) {
	tab := builtinTable()
	cases := []struct {
		tool, args string
		want       []Edit
	}{
		{"run_shell_command", `{"command":"printf x > out.txt","dir_path":"pkg"}`, []Edit{{Path: "pkg/out.txt", Op: OpWrite}}},
		{"run_shell_command", `{"command":"rm /tmp/x","directory":"pkg"}`, []Edit{{Path: "/tmp/x", Op: OpDelete}}},
		{"execute_command", `{"command":"mv a b","cwd":"/w"}`, []Edit{{Path: "/w/a", Op: OpWrite}, {Path: "/w/b", Op: OpWrite}}},
		{"Bash", `{"command":"echo > f; rm f"}`, []Edit{{Path: "f", Op: OpDelete}}},
		{"Bash", `{"command":"git status"}`, nil},
	}
	for _, c := range cases {
		got, err := tab.Edits(c.tool, []byte(c.args), false)
		require.NoError(t, err, c.args)
		require.Equal(t, c.want, got, c.args)
	}
	// A free-form shell call's input is the script.
	got, err := NewTable([]Rule{{Tool: "sh", Kind: KindShell}}).Edits("sh", []byte("touch a"), true)
	require.NoError(t, err)
	require.Equal(t, []Edit{{Path: "a", Op: OpWrite}}, got)
}
