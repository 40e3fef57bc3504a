package proxy_test

// The "done when" of intent governance: a Claude Code-shaped session,
// streamed through anthropic-sdk-go the way Claude Code streams, with
// Claude Code's tools, system prompt and metadata.user_id. The model reads
// before it has an intent, selects INT-001, edits in scope, tries to write
// outside the scope and is refused without the agent ever seeing the call,
// explains and carries on in scope.

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
)

// claudeCodeTool declares one of Claude Code's tools with its input schema
// (raw JSON, in Claude Code's key order).
func claudeCodeTool(name, description, schema string) anthropic.ToolUnionParam {
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        name,
		Description: anthropic.String(description),
		InputSchema: param.Override[anthropic.ToolInputSchemaParam](json.RawMessage(schema)),
	}}
}

// claudeCodeTools are Claude Code's file and shell tools as it declares
// them (descriptions shortened).
func claudeCodeTools() []anthropic.ToolUnionParam {
	const draft = `"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`
	return []anthropic.ToolUnionParam{
		claudeCodeTool("Bash", "Executes a given bash command in a persistent shell session with optional timeout.",
			`{"type":"object","properties":{"command":{"type":"string","description":"The command to execute"},`+
				`"timeout":{"type":"number","description":"Optional timeout in milliseconds (max 600000)"},`+
				`"description":{"type":"string","description":"Clear, concise description of what this command does in 5-10 words"},`+
				`"run_in_background":{"type":"boolean","description":"Set to true to run this command in the background."}},`+
				`"required":["command"],`+draft),
		claudeCodeTool("Glob", "Fast file pattern matching tool that works with any codebase size.",
			`{"type":"object","properties":{"pattern":{"type":"string","description":"The glob pattern to match files against"},`+
				`"path":{"type":"string","description":"The directory to search in. If not specified, the current working directory will be used."}},`+
				`"required":["pattern"],`+draft),
		claudeCodeTool("Grep", "A powerful search tool built on ripgrep.",
			`{"type":"object","properties":{"pattern":{"type":"string","description":"The regular expression pattern to search for in file contents"},`+
				`"path":{"type":"string","description":"File or directory to search in (rg PATH). Defaults to current working directory."},`+
				`"glob":{"type":"string","description":"Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\") - maps to rg --glob"},`+
				`"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"description":"Output mode."},`+
				`"-i":{"type":"boolean","description":"Case insensitive search (rg -i)"},`+
				`"-n":{"type":"boolean","description":"Show line numbers in output (rg -n)."},`+
				`"head_limit":{"type":"number","description":"Limit output to first N lines/entries"}},`+
				`"required":["pattern"],`+draft),
		claudeCodeTool("Read", "Reads a file from the local filesystem. The file_path parameter must be an absolute path, not a relative path.",
			`{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path to the file to read"},`+
				`"offset":{"type":"number","description":"The line number to start reading from."},`+
				`"limit":{"type":"number","description":"The number of lines to read."}},`+
				`"required":["file_path"],`+draft),
		claudeCodeTool("Edit", "Performs exact string replacements in files.",
			`{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path to the file to modify"},`+
				`"old_string":{"type":"string","description":"The text to replace"},`+
				`"new_string":{"type":"string","description":"The text to replace it with (must be different from old_string)"},`+
				`"replace_all":{"type":"boolean","default":false,"description":"Replace all occurences of old_string (default false)"}},`+
				`"required":["file_path","old_string","new_string"],`+draft),
		claudeCodeTool("Write", "Writes a file to the local filesystem. This tool will overwrite the existing file if there is one at the provided path.",
			`{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path to the file to write (must be absolute, not relative)"},`+
				`"content":{"type":"string","description":"The content to write to the file"}},`+
				`"required":["file_path","content"],`+draft),
	}
}

// claudeCodeSystem is the shape of Claude Code's system prompt: the
// identity block, then the instructions with the environment, both cached.
func claudeCodeSystem(dir string) []anthropic.TextBlockParam {
	return []anthropic.TextBlockParam{
		{Text: "You are Claude Code, Anthropic's official CLI for Claude.", CacheControl: anthropic.NewCacheControlEphemeralParam()},
		{Text: "\nYou are an interactive CLI tool that helps users with software engineering tasks. " +
			"Use the instructions below and the tools available to you to assist the user.\n\n" +
			"# Tone and style\nYou should be concise, direct, and to the point.\n\n" +
			"# Doing tasks\nThe user will primarily request you perform software engineering tasks.\n\n" +
			"Here is useful information about the environment you are running in:\n<env>\n" +
			"Working directory: " + dir + "\nIs directory a git repo: Yes\nPlatform: linux\n" +
			"OS Version: Linux 6.8.0\nToday's date: 2025-06-01\n</env>\n" +
			"You are powered by the model named Sonnet 4. The exact model ID is claude-sonnet-4-20250514.",
			CacheControl: anthropic.NewCacheControlEphemeralParam()},
	}
}

// claudeCodeSession is an anthTopicSession set up as Claude Code sets up
// its requests; the agent's tool results carry the texts Claude Code sends.
func claudeCodeSession(h *harness, dir, sessionID string, wire http.RoundTripper) *anthTopicSession {
	userID, _ := json.Marshal(map[string]string{
		"device_id":    "5a3c9e0f6b8d4e21a7c2f1d08e9b6a4c3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c",
		"account_uuid": "1f6e0c3a-2b7d-4e8f-9a1c-5d3b7e9f2a4c",
		"session_id":   sessionID,
	})
	c := anthropic.NewClient(
		aoption.WithBaseURL(h.URL), aoption.WithAPIKey("sk-ant-api03-claude-code-test"),
		aoption.WithMaxRetries(0), aoption.WithHTTPClient(&http.Client{Transport: wire}),
		aoption.WithQuery("beta", "true"),
		aoption.WithHeader("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"),
		aoption.WithHeader("x-app", "cli"),
		aoption.WithHeader("User-Agent", "claude-cli/2.1.80 (external, cli)"),
	)
	return &anthTopicSession{c: c, p: anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-20250514",
		MaxTokens: 32000,
		System:    claudeCodeSystem(dir),
		Tools:     claudeCodeTools(),
		Metadata:  anthropic.MetadataParam{UserID: anthropic.String(string(userID))},
	}}
}

func (s *anthTopicSession) claudeCodeResult(id, content string) {
	s.p.Messages = append(s.p.Messages, anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, content, false)))
}

// agentToolUses lists every tool_use the agent holds in its conversation
// (the SDK's accumulated messages), as "Name input".
func agentToolUses(t *testing.T, s *anthTopicSession) []string {
	t.Helper()
	var out []string
	for _, m := range s.p.Messages {
		for _, b := range m.Content {
			if tu := b.OfToolUse; tu != nil {
				in, err := json.Marshal(tu.Input)
				require.NoError(t, err)
				out = append(out, tu.Name+" "+string(in))
			}
		}
	}
	return out
}

// TestIntentsClaudeCodeSession is intent governance end to end with Claude Code.
func TestIntentsClaudeCodeSession(t *testing.T) {
	t.Parallel()
	api := topicAPINamed(t, "anthropic")
	dir := intentWorkspace(t, intentPolicy(""))
	h := newIntentHarness(t, dir)
	const sessionID = "0b7f2c1e-8d4a-4f6b-9e3c-2a1d5f7b9c0e"
	login := filepath.Join(dir, "src", "auth", "login.go")
	loginTest := filepath.Join(dir, "tests", "auth", "login_test.go")
	cron := "/etc/cron.d/session-cleanup"
	secret := filepath.Join(dir, "src", "auth", "secrets", "session.key")
	outside := dir + "/../outside.txt" // as the model wrote it, not cleaned
	args := func(kv ...string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	readArgs := args("file_path", login)
	editArgs := args("file_path", login, "old_string", "if user == nil {", "new_string", "if user == nil || password == \"\" {")
	cronArgs := args("file_path", cron, "content", "*/5 * * * * root /usr/local/bin/cleanup-sessions\n")
	testArgs := args("file_path", loginTest, "old_string", "func TestLogin(t *testing.T) {",
		"new_string", "func TestLoginRejectsEmptyPassword(t *testing.T) {\n\trequire.Error(t, Login(\"bob\", \"\"))\n}\n\nfunc TestLogin(t *testing.T) {")
	secretArgs := args("file_path", secret, "content", "rotated\n")
	outsideArgs := args("file_path", outside, "content", "notes\n")
	const stopText = "I can't write outside the workspace: that file is outside the scope of INT-001. " +
		"I'll cover the fix with a test instead."
	const finalText = "Empty passwords are now rejected in the login handler, with a test. " +
		"The session key rotation and the notes are outside INT-001, so I left them."

	h.mock.Script(
		// Turn 1: a Read, allowed before any intent.
		mock.Reply{ID: "msg_01", Text: "I'll look at the login handler first.", ToolCalls: []mock.ToolCall{{ID: "toolu_01", Name: "Read", Args: readArgs}}},
		// Turn 2: the selection (answered by shepherd), then an in-scope Edit.
		mock.Reply{ID: "msg_02", ToolCalls: []mock.ToolCall{{ID: "toolu_02", Name: intents.IntentTool, Args: `{"intent_id":"INT-001"}`}}},
		mock.Reply{ID: "msg_03", Text: "Rejecting empty passwords.", ToolCalls: []mock.ToolCall{{ID: "toolu_03", Name: "Edit", Args: editArgs}}},
		// Turn 3: a Write outside the workspace, alone: refused; the model
		// says why it stopped and edits in scope instead.
		mock.Reply{ID: "msg_04", ToolCalls: []mock.ToolCall{{ID: "toolu_04", Name: "Write", Args: cronArgs}}},
		mock.Reply{ID: "msg_05", Text: stopText, ToolCalls: []mock.ToolCall{{ID: "toolu_05", Name: "Edit", Args: testArgs}}},
		// Turn 4: a deny_glob Write, then a ../ escape, each refused; then
		// the final answer.
		mock.Reply{ID: "msg_06", ToolCalls: []mock.ToolCall{{ID: "toolu_06", Name: "Write", Args: secretArgs}}},
		mock.Reply{ID: "msg_07", ToolCalls: []mock.ToolCall{{ID: "toolu_07", Name: "Write", Args: outsideArgs}}},
		mock.Reply{ID: "msg_08", Text: finalText},
	)
	wire := &topicWireLog{}
	t.Cleanup(func() {
		if t.Failed() {
			wire.dump(t)
			for i, r := range h.mock.Requests() {
				t.Logf("upstream request %d: %s?%s\n%s", i+1, r.Path, r.Query, r.Body)
			}
		}
	})
	ctx := e2eCtx(t)
	s := claudeCodeSession(h, dir, sessionID, wire)
	send := func(wantUpstream int) topicStreamReply {
		t.Helper()
		r := s.send(t, ctx)
		require.NoError(t, r.err, "events: %v", r.events)
		require.Len(t, h.mock.Requests(), wantUpstream)
		return r
	}

	// Turn 1.
	s.user("Login accepts empty passwords. Fix it.")
	r := send(1)
	require.Equal(t, "I'll look at the login handler first.", r.text)
	requireCalls(t, []mock.ToolCall{{ID: "toolu_01", Name: "Read", Args: readArgs}}, r.calls)
	require.Equal(t, "tool_use", r.stop)
	s.claudeCodeResult("toolu_01", "     1\tpackage auth\n     2\t\n     3\tfunc Login(name, password string) error {\n     4\t\tuser := find(name)\n     5\t\tif user == nil {\n")

	// Turn 2.
	r = send(3)
	require.Equal(t, "Rejecting empty passwords.", r.text)
	requireCalls(t, []mock.ToolCall{{ID: "toolu_03", Name: "Edit", Args: editArgs}}, r.calls)
	s.claudeCodeResult("toolu_03", "The file "+login+" has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     5\t\tif user == nil || password == \"\" {")

	// Turn 3.
	r = send(5)
	require.Equal(t, stopText, r.text, "the turn goes on after the refusal")
	requireCalls(t, []mock.ToolCall{{ID: "toolu_05", Name: "Edit", Args: testArgs}}, r.calls)
	require.Equal(t, "tool_use", r.stop)
	s.claudeCodeResult("toolu_05", "The file "+loginTest+" has been updated.")

	// Turn 4.
	r = send(8)
	require.Equal(t, finalText, r.text, "the work ends with the model's answer")
	require.Empty(t, r.calls)
	require.Equal(t, "end_turn", r.stop)

	// The agent never received a refused call, in any turn.
	require.Equal(t, normalizeToolUses(t, []string{"Read " + readArgs, "Edit " + editArgs, "Edit " + testArgs}),
		normalizeToolUses(t, agentToolUses(t, s)))

	reqs := h.mock.Requests()
	for i, req := range reqs {
		require.True(t, req.Stream, "upstream request %d is streamed", i+1)
		require.Equal(t, "/v1/messages", req.Path)
		require.Equal(t, "beta=true", req.Query)
		require.Equal(t, "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14", req.Header.Get("Anthropic-Beta"))
		require.Equal(t, gjson.GetBytes(reqs[0].Body, "metadata").Raw, gjson.GetBytes(req.Body, "metadata").Raw)
	}
	requireAllAppendOnly(t, api, reqs)

	// The model was told why, and keeps being told.
	require.Contains(t, lastHistoryItem(api, reqs[0].Body), "[Active Intent: none]")
	require.Contains(t, gjson.GetBytes(reqs[0].Body, "system").Raw, "Intent-first rule")
	require.Contains(t, requireResult(t, api.name, reqs[2].Body, "toolu_02").content, `<intent_context intent_id="INT-001">`)
	cronReason := `"` + cron + `" is outside the workspace`
	secretReason := `"src/auth/secrets/session.key" is outside the scope of intent INT-001`
	outsideReason := `"` + outside + `" is outside the workspace`
	requireRefusal(t, api.name, reqs[4].Body, "toolu_04", cronReason)
	requireRefusal(t, api.name, reqs[6].Body, "toolu_06", secretReason)
	requireRefusal(t, api.name, reqs[7].Body, "toolu_07", outsideReason)
	last := reqs[7].Body
	for _, id := range []string{"toolu_04", "toolu_06"} {
		requireRefusal(t, api.name, last, id, "") // still in the model's history
	}
	require.Contains(t, requireResult(t, api.name, reqs[6].Body, "toolu_06").content, "deny_glob")
	require.Contains(t, lastHistoryItem(api, reqs[5].Body), "[Active Intent: INT-001 — Fix the login bug]",
		"the agent's newest turn names the intent")

	// The audit trail tells the story.
	sess := intentSession(t, h, sessionID)
	require.Equal(t, "INT-001", intentsOf(t, sess).Intent)
	require.Equal(t, []string{
		"allowed always_allowed Read toolu_01 ",
		"selected select_intent select_active_intent toolu_02 INT-001",
		"allowed checks_passed Edit toolu_03 INT-001",
		"refused scope Write toolu_04 INT-001",
		"allowed checks_passed Edit toolu_05 INT-001",
		"refused scope Write toolu_06 INT-001",
		"refused scope Write toolu_07 INT-001",
	}, auditTrail(intentsOf(t, sess).Audit))
	require.Contains(t, intentsOf(t, sess).Audit[3].Reason, cronReason)
	require.Contains(t, intentsOf(t, sess).Audit[5].Reason, secretReason)
	require.Contains(t, intentsOf(t, sess).Audit[6].Reason, outsideReason)
}

// normalizeToolUses re-encodes the input of each "Name input" entry so
// that key order and escaping do not matter.
func normalizeToolUses(t *testing.T, uses []string) []string {
	t.Helper()
	out := make([]string, len(uses))
	for i, u := range uses {
		name, in, _ := strings.Cut(u, " ")
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(in), &m), u)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		out[i] = name + " " + string(b)
	}
	return out
}
