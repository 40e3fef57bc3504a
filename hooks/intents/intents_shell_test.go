package intents

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// TestIntentsShellCommands checks the files shell commands write against
// the active intent's scope (INT-002: docs/**).
func TestIntentsShellCommands(t *testing.T) {
	p := mustPolicy(t, intentsYAML)
	sa, err := policy.ParseShellArgs([]string{"Bash:command", "shell:argv(command)@workdir", "run_commands:commands"})
	require.NoError(t, err)
	cases := []struct {
		name          string
		tool, args    string
		allowUnparsed bool
		verdict       conv.Verdict
		rule, result  string
	}{
		{"read-only command", "Bash", `{"command":"ls -la && cat src/a.go | grep x"}`, false, conv.Pass, RuleChecksPassed, ""},
		{"write in scope", "Bash", `{"command":"echo hi > docs/a.md"}`, false, conv.Pass, RuleChecksPassed, ""},
		{"redirect out of scope", "Bash", `{"command":"echo hi > src/a.go"}`, false, conv.Refuse, RuleScope,
			`this Bash command writes "src/a.go", which is outside the scope of intent INT-002`},
		{"cd then write out of scope", "Bash", `{"command":"cd src && sed -i s/a/b/ main.go"}`, false, conv.Refuse, RuleScope, `"src/main.go"`},
		{"out of the workspace", "Bash", `{"command":"rm /etc/passwd"}`, false, conv.Refuse, RuleScope, `"/etc/passwd", which is outside the workspace`},
		{"dynamic target refused", "Bash", `{"command":"echo x > $OUT"}`, false, conv.Refuse, RuleUnparsedCommand, "$OUT"},
		{"dynamic target allowed by config", "Bash", `{"command":"echo x > $OUT"}`, true, conv.Pass, RuleChecksPassed, ""},
		{"concrete target named before the dynamic one", "Bash", `{"command":"echo > $X; rm src/a"}`, true, conv.Refuse, RuleScope, `"src/a"`},
		{"argv in workdir", "shell", `{"command":["bash","-lc","touch a.md"],"workdir":"docs"}`, false, conv.Pass, RuleChecksPassed, ""},
		{"argv out of scope", "shell", `{"command":["bash","-lc","mv docs/a.md README.md"]}`, false, conv.Refuse, RuleScope, `"README.md"`},
		{"argv workdir out of scope", "shell", `{"command":["touch","x"],"workdir":"/work/app/src"}`, false, conv.Refuse, RuleScope, `"src/x"`},
		{"list of scripts", "run_commands", `{"commands":["ls","tee docs/a notes.txt"]}`, false, conv.Refuse, RuleScope, `"notes.txt"`},
		{"missing command", "Bash", `{"description":"x"}`, false, conv.Refuse, RuleUnparsedCommand, "missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newIntentsFixture(t, p, func(c *Options) {
				c.ShellArgs = sa
				c.AllowUnparsed = tc.allowUnparsed
			})
			d, _ := decide(t, f.h, callWith(sessionWith("INT-002", 2)),
				conv.ToolCall{Name: tc.tool, Args: []byte(tc.args)})
			v, res := verdictOf(d, 0)
			require.Equal(t, tc.verdict, v, res)
			require.Contains(t, res, tc.result)
			require.Equal(t, tc.rule, f.decisions[0].Rule)
		})
	}
}

// TestIntentsInferPaths checks that tools in no table are scope-checked on
// their path-like arguments, and listed read-only tools are not.
func TestIntentsInferPaths(t *testing.T) {
	p := mustPolicy(t, intentsYAML)
	cases := []struct {
		name, tool, args string
		infer            bool
		verdict          conv.Verdict
		result           string
	}{
		{"unlisted tool with path out of scope", "mcp__fs__write", `{"path":"src/a.go","content":"x"}`, true, conv.Refuse, `"src/a.go"`},
		{"unlisted tool with files[].path", "save_all", `{"files":[{"path":"docs/a"},{"path":"src/b"}]}`, true, conv.Refuse, `"src/b"`},
		{"unlisted tool with a patch", "patcher", `{"patch":"*** Begin Patch\n*** Delete File: src/x\n*** End Patch"}`, true, conv.Refuse, `"src/x"`},
		{"unlisted tool in scope", "mcp__fs__write", `{"file_path":"docs/a.md"}`, true, conv.Pass, ""},
		{"unlisted tool without paths", "mcp__db__query", `{"sql":"select 1"}`, true, conv.Pass, ""},
		{"always-allowed tool is not inferred", "Grep", `{"path":"/etc"}`, true, conv.Pass, ""},
		{"inference off", "mcp__fs__write", `{"path":"src/a.go"}`, false, conv.Pass, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newIntentsFixture(t, p, func(c *Options) { c.InferPaths = tc.infer })
			d, _ := decide(t, f.h, callWith(sessionWith("INT-002", 2)),
				conv.ToolCall{Name: tc.tool, Args: []byte(tc.args)})
			v, res := verdictOf(d, 0)
			require.Equal(t, tc.verdict, v, res)
			require.Contains(t, res, tc.result)
		})
	}
}
