package proxy_test

// Governance of the files agents write through their shell tools and of
// Cline CLI's editor, with the default tool tables: a command that writes
// outside the active intent's scope (INT-002: docs/**) never reaches the
// agent and the model is told which file is out of scope.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
)

// TestIntentsClaudeCodeBashOutOfScope streams a Claude Code session (its
// tools, system prompt and headers) whose model writes through Bash.
func TestIntentsClaudeCodeBashOutOfScope(t *testing.T) {
	dir := intentWorkspace(t, intentPolicy("INT-002"))
	h := newIntentHarness(t, dir)
	const (
		badArgs  = `{"command":"cd src/auth && sed -i 's/a/b/' login.go","description":"Patch the login handler"}`
		goodArgs = `{"command":"cat > docs/login.md <<'EOF'\n# Login\nEOF","description":"Document the login"}`
	)
	h.mock.Script(
		mock.Reply{ID: "msg_01", ToolCalls: []mock.ToolCall{{ID: "toolu_01", Name: "Bash", Args: badArgs}}},
		mock.Reply{ID: "msg_02", Text: "Documenting instead.", ToolCalls: []mock.ToolCall{{ID: "toolu_02", Name: "Bash", Args: goodArgs}}},
	)
	s := claudeCodeSession(h, dir, "cc-bash", &topicWireLog{})
	s.user("Document the login flow.")
	r := s.send(t, e2eCtx(t))
	require.NoError(t, r.err, "events: %v", r.events)
	requireCalls(t, []mock.ToolCall{{ID: "toolu_02", Name: "Bash", Args: goodArgs}}, r.calls)

	reqs := h.mock.Requests()
	require.Len(t, reqs, 2)
	requireRefusal(t, "anthropic", reqs[1].Body,
		"toolu_01", `this Bash command writes "src/auth/login.go", which is outside the scope of intent INT-002`)
	sess := intentSession(t, h, "cc-bash")
	require.Equal(t, []string{"refused scope Bash toolu_01 INT-002", "allowed checks_passed Bash toolu_02 INT-002"}, auditTrail(intentsOf(t, sess).Audit))
}

// TestIntentsShellToolsOutOfScope drives each agent's shell tool (and Cline
// CLI's editor) over the wire API the agent speaks, with raw HTTP.
func TestIntentsShellToolsOutOfScope(t *testing.T) {
	cases := []struct {
		agent, api, tool string
		bad, good        string
		reason           string
	}{
		{"codex shell", "openai_responses", "shell",
			`{"command":["bash","-lc","echo done > ../notes.txt"],"workdir":"docs/../src"}`,
			`{"command":["bash","-lc","echo done > notes.txt"],"workdir":"docs"}`,
			`this shell command writes "notes.txt", which is outside the scope of intent INT-002`},
		{"codex exec_command", "openai_responses", "exec_command",
			`{"cmd":"echo x > $OUT"}`, `{"cmd":"ls docs"}`,
			`cannot tell which files this exec_command command writes (the redirection target "$OUT" is not a literal path)`},
		{"codex shell_command", "openai_responses", "shell_command",
			`{"command":"sed -i s/a/b/ ../notes.txt","workdir":"docs"}`, `{"command":"sed -i s/a/b/ notes.txt","workdir":"docs"}`,
			`this shell_command command writes "notes.txt", which is outside the scope of intent INT-002`},
		{"gemini-cli run_shell_command (dir_path)", "gemini", "run_shell_command",
			`{"command":"rm -rf build","dir_path":"src"}`, `{"command":"mkdir -p guides","dir_path":"docs"}`,
			`this run_shell_command command writes "src/build", which is outside the scope`},
		{"gemini-cli run_shell_command", "gemini", "run_shell_command",
			`{"command":"rm -rf build","directory":"src"}`, `{"command":"mkdir -p guides","directory":"docs"}`,
			`this run_shell_command command writes "src/build", which is outside the scope`},
		{"cline execute_command", "openai_chat", "execute_command",
			`{"command":"npm run build && cp dist/app.js /usr/local/bin/app","requires_approval":false}`,
			`{"command":"npm test","requires_approval":false}`,
			`this execute_command command writes "/usr/local/bin/app", which is outside the workspace`},
		{"cline cli run_commands", "anthropic", "run_commands",
			`{"commands":["git status","tee -a docs/log.md README.md"]}`, `{"commands":["git status"]}`,
			`this run_commands command writes "README.md", which is outside the scope`},
		{"cline cli editor", "openai_chat", "editor",
			`{"path":"src/app.ts","old_text":"a","new_text":"b"}`, `{"path":"docs/app.md","old_text":"a","new_text":"b"}`,
			`editor on "src/app.ts" is outside the scope of intent INT-002`},
	}
	for _, c := range cases {
		t.Run(c.agent, func(t *testing.T) {
			var ic intentCase
			for _, x := range intentCases("raw") {
				if x.api.name == c.api {
					ic = x
				}
			}
			require.NotEmpty(t, ic.api.name)
			dir := intentWorkspace(t, intentPolicy("INT-002"))
			h := newIntentHarness(t, dir)
			h.mock.Script(
				mock.Reply{ID: "m1", ToolCalls: []mock.ToolCall{{ID: "c1", Name: c.tool, Args: c.bad}}},
				mock.Reply{ID: "m2", ToolCalls: []mock.ToolCall{{ID: "c2", Name: c.tool, Args: c.good}}},
			)
			session := "shell-" + strings.ReplaceAll(c.agent, " ", "-")
			a := ic.agent(t, h, session)
			a.user("work on the docs")
			reply := a.send(t)
			requireCalls(t, []mock.ToolCall{{ID: "c2", Name: c.tool, Args: c.good}}, reply.calls)
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2, "the refusal is followed up")
			requireRefusal(t, c.api, reqs[1].Body, "c1", c.reason)
			rule := intents.RuleScope
			if strings.Contains(c.reason, "cannot tell") {
				rule = intents.RuleUnparsedCommand
			}
			sess := intentSession(t, h, session)
			require.Equal(t, []string{"refused " + rule + " " + c.tool + " c1 INT-002", "allowed checks_passed " + c.tool + " c2 INT-002"},
				auditTrail(intentsOf(t, sess).Audit))
		})
	}
}
