package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

func TestWorkspaceTools(t *testing.T) {
	task, _ := TaskNamed("fix-add")
	ws, err := NewWorkspace(t.TempDir(), task)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Remove() })

	for _, tc := range []struct {
		name, tool, args, want string
	}{
		{"list the root", ToolList, `{}`, ".orchestration/active_intents.yaml\nREADME.md\ncalc/calc.go\ncalc/calc_test.go"},
		{"list a directory", ToolList, `{"path":"calc"}`, "calc/calc.go\ncalc/calc_test.go"},
		{"read", ToolRead, `{"path":"calc/calc.go"}`, calcBuggy},
		{"read an absolute path inside", ToolRead, `{"path":"` + filepath.ToSlash(filepath.Join(ws.Root, "README.md")) + `"}`, task.Files["README.md"]},
		{"read a missing file", ToolRead, `{"path":"nope.go"}`, "error: read nope.go:"},
		{"read outside", ToolRead, `{"path":"../x"}`, `error: "../x" is outside the workspace`},
		{"read an absolute path outside", ToolRead, `{"path":"/etc/passwd"}`, `error: "/etc/passwd" is outside the workspace`},
		{"tests fail first", ToolTests, `{}`, "--- FAIL: TestAdd"},
		{"write", ToolWrite, `{"file_path":"calc/calc.go","content":` + kit.Quote(calcFixed) + `}`, fmt.Sprintf("wrote %d bytes to calc/calc.go", len(calcFixed))},
		{"tests pass then", ToolTests, `{"package":"calc"}`, "ok  \tcalc"},
		{"write a new directory", ToolWrite, `{"file_path":"docs/a/b.md","content":"x"}`, "wrote 1 bytes to docs/a/b.md"},
		{"write without a path", ToolWrite, `{"content":"x"}`, "error: file_path is required"},
		{"write outside", ToolWrite, `{"file_path":"../../x","content":"x"}`, "error: "},
		{"unknown tool", "Bash", `{}`, `error: unknown tool "Bash"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ws.Run(tc.tool, tc.args)
			require.True(t, strings.HasPrefix(got, tc.want), "got %q", got)
		})
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(ws.Root), "x"))
	require.True(t, os.IsNotExist(err), "nothing was written outside")
}

// TestTasks: every task starts unsolved, its policy names the intents
// its scripts select, and its scripts and expected texts exist for both
// mock models.
func TestTasks(t *testing.T) {
	names := map[string]bool{}
	for _, task := range Tasks() {
		require.False(t, names[task.Name], "task names are unique")
		names[task.Name] = true
		ws, err := NewWorkspace(t.TempDir(), task)
		require.NoError(t, err)
		pass, out := task.Check(ws)
		require.False(t, pass, "%s is solved before the model acted: %s", task.Name, out)
		require.NotEmpty(t, task.Phases)
		for _, script := range []string{ScriptCompliant, ScriptCareless} {
			require.NotEmpty(t, task.Scripts[script], "%s/%s", task.Name, script)
			require.Len(t, task.Expected[script], 1, "%s/%s: one cut reply", task.Name, script)
			for _, r := range task.Scripts[script] {
				for _, c := range r.ToolCalls {
					if id := strings.Trim(strings.TrimPrefix(c.Args, `{"intent_id":`), `"}`); strings.HasPrefix(id, "INT-") {
						require.Contains(t, task.Policy, "id: "+id, "%s/%s selects an intent of the policy", task.Name, script)
					}
				}
			}
		}
		got, ok := TaskNamed(task.Name)
		require.True(t, ok)
		require.Equal(t, task.Name, got.Name)
	}
	_, ok := TaskNamed("nope")
	require.False(t, ok)
}
