package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseShellArgs(t *testing.T) {
	sa, err := ParseShellArgs([]string{"Bash:command", "shell:argv(command)@workdir", "run_commands:commands", "Bash:command"})
	require.NoError(t, err)
	require.True(t, sa.Knows("Bash"))
	require.False(t, sa.Knows("Write"))
	require.False(t, (*ShellArgs)(nil).Knows("Bash"))

	_, err = ParseShellArgs([]string{"nocolon", "x:argv()", "y:a..b", "Bash:command", "Bash:cmd", "z:c@"})
	require.Error(t, err)
	for _, bad := range []string{`"nocolon"`, `"x:argv()"`, `"y:a..b"`, `"Bash:cmd"`} {
		require.Contains(t, err.Error(), bad)
	}
}

func TestShellArgsCommands(t *testing.T) {
	sa, err := ParseShellArgs([]string{"Bash:command", "shell:argv(command)@workdir", "run_commands:commands"})
	require.NoError(t, err)
	cases := []struct {
		tool, args string
		want       []ShellCommand
		known      bool
		err        string
	}{
		{"Bash", `{"command":"ls"}`, []ShellCommand{{Script: "ls"}}, true, ""},
		{"shell", `{"command":["bash","-lc","ls"],"workdir":"/w"}`, []ShellCommand{{Argv: []string{"bash", "-lc", "ls"}, Dir: "/w"}}, true, ""},
		{"shell", `{"command":"ls"}`, nil, true, "not an array"},
		{"shell", `{"command":["ls",1]}`, nil, true, "not an array"},
		{"run_commands", `{"commands":["a","b"]}`, []ShellCommand{{Script: "a"}, {Script: "b"}}, true, ""},
		{"Bash", `{}`, nil, true, "missing"},
		{"Bash", `{"command":`, nil, true, "not valid JSON"},
		{"Bash", `{"command":3}`, nil, true, "not a string"},
		{"Read", `{"file_path":"x"}`, nil, false, ""},
	}
	for _, c := range cases {
		got, known, err := sa.Commands(c.tool, []byte(c.args))
		require.Equal(t, c.known, known, c.args)
		require.Equal(t, c.want, got, c.args)
		if c.err == "" {
			require.NoError(t, err, c.args)
		} else {
			require.ErrorContains(t, err, c.err, c.args)
		}
	}
}

func TestInferPaths(t *testing.T) {
	cases := []struct {
		args string
		want []string
		err  string
	}{
		{`{"path":"a","file_path":"b","filepath":"c","filePath":"d","notebook_path":"e","target_file":"f"}`, []string{"a", "b", "c", "d", "e", "f"}, ""},
		{`{"paths":["a","b",3],"files":[{"path":"c"},{"name":"x"}]}`, []string{"a", "b", "c"}, ""},
		{`{"input":"*** Begin Patch\n*** Add File: n.go\n+x\n*** End Patch"}`, []string{"n.go"}, ""},
		{`{"input":"just text *** with stars"}`, nil, ""},
		{`{"patch":"*** Begin Patch\n*** Update File: \n*** End Patch"}`, nil, "empty path"},
		{`{"query":"x"}`, nil, ""},
		{`[1,2]`, nil, ""},
		{`{"path":`, nil, ""},
	}
	for _, c := range cases {
		got, err := InferPaths([]byte(c.args))
		require.Equal(t, c.want, got, c.args)
		if c.err == "" {
			require.NoError(t, err, c.args)
		} else {
			require.ErrorContains(t, err, c.err, c.args)
		}
	}
}

// FuzzInferPaths checks that InferPaths and ShellArgs.Commands never panic
// on arbitrary arguments and return only non-empty paths.
func FuzzInferPaths(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"files":[{"path":"b"}]}`, `{"input":"*** Begin Patch\n*** Add File: x\n*** End Patch"}`,
		`{"command":["bash","-lc","ls"],"workdir":"w"}`, `{"commands":["a",1]}`, `[]`, `{"paths":[1,"x"]}`} {
		f.Add(s)
	}
	sa, err := ParseShellArgs([]string{"Bash:command", "shell:argv(command)@workdir", "run_commands:commands"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		paths, _ := InferPaths([]byte(args))
		for _, p := range paths {
			if p == "" {
				t.Fatalf("empty path from %q", args)
			}
		}
		for _, tool := range []string{"Bash", "shell", "run_commands"} {
			if _, known, _ := sa.Commands(tool, []byte(args)); !known {
				t.Fatalf("%s unknown", tool)
			}
		}
	})
}

func TestShellArgsDirAlternatives(t *testing.T) {
	sa, err := ParseShellArgs([]string{"run_shell_command:command@dir_path|directory"})
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"command":"ls","dir_path":"new"}`:                    "new",
		`{"command":"ls","directory":"old"}`:                   "old",
		`{"command":"ls","dir_path":"new","directory":"old"}`:  "new",
		`{"command":"ls"}`:                                     "",
		`{"command":"ls","dir_path":7,"directory":"fallback"}`: "fallback",
	} {
		cmds, known, err := sa.Commands("run_shell_command", []byte(args))
		if err != nil || !known || len(cmds) != 1 || cmds[0].Dir != want {
			t.Errorf("%s: got %+v known=%v err=%v, want dir %q", args, cmds, known, err, want)
		}
	}
	if _, err := ParseShellArgs([]string{"t:command@a||b"}); err == nil {
		t.Error("an empty alternative must be refused")
	}
}
