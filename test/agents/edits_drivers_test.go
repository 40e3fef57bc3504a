package agents

import (
	"encoding/json"
	"strings"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/state"
)

// editStep is one tool call of the edit scenario, as the model makes it,
// and what it must leave on disk once the agent ran it.
type editStep struct {
	// Call is the model's call; the scenario sets its ID.
	Call mock.ToolCall
	// Op is the journal's operation of a file edit (state.EditCreate, …);
	// "" for a read, which the journal does not list.
	Op string
	// Want is the file's whole content on disk after the agent ran the
	// call.
	Want string
	// Size is the byte size of what the call writes (the content, the
	// replacement text, or the file's section of the patch: its header line
	// and hunks), which edit.finished and the journal report.
	Size int
}

// editor is a driver the edit scenario can script: the CLI's own tools to
// read a file, create it and change part of it.
type editor interface {
	driver
	// editSteps returns the calls that create path (absolute) with v1,
	// read it where the CLI has a read tool (Claude Code refuses to edit a
	// file it has not read; a read also tells shepherd the before-content),
	// then replace the text old with repl in it.
	editSteps(path, v1, old, repl string) []editStep
	// streamsArguments reports whether the API streams a call's arguments
	// in many deltas (Gemini sends each call whole in one event).
	streamsArguments() bool
}

// jsonArgs renders arguments in the order given (the path first, as models
// write it, so it is complete long before the content ends).
func jsonArgs(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// edited is v1 with old replaced by repl once.
func edited(v1, old, repl string) string { return strings.Replace(v1, old, repl, 1) }

// Claude Code: Write, Read, Edit.
func (claudeCode) editSteps(path, v1, old, repl string) []editStep {
	return []editStep{
		{Call: mock.ToolCall{Name: "Write", Args: jsonArgs("file_path", path, "content", v1)},
			Op: state.EditCreate, Want: v1, Size: len(v1)},
		{Call: mock.ToolCall{Name: "Read", Args: jsonArgs("file_path", path)}, Want: v1},
		{Call: mock.ToolCall{Name: "Edit", Args: jsonArgs("file_path", path, "old_string", old, "new_string", repl)},
			Op: state.EditModify, Want: edited(v1, old, repl), Size: len(repl)},
	}
}

func (claudeCode) streamsArguments() bool { return true }

// Codex: apply_patch (free-form) adding the file, then updating it; Codex
// has no read tool of its own (it reads with shell commands).
func (codexCLI) editSteps(path, v1, old, repl string) []editStep {
	add := addFilePatch(path, v1)
	upd := updateFilePatch(path, v1, old, repl)
	return []editStep{
		{Call: mock.ToolCall{Name: "apply_patch", Custom: true, Args: add}, Op: state.EditCreate, Want: v1, Size: patchSection(add)},
		{Call: mock.ToolCall{Name: "apply_patch", Custom: true, Args: upd}, Op: state.EditModify,
			Want: edited(v1, old, repl), Size: patchSection(upd)},
	}
}

func (codexCLI) streamsArguments() bool { return true }

// gemini-cli: write_file, read_file, replace.
func (geminiCLI) editSteps(path, v1, old, repl string) []editStep {
	return []editStep{
		{Call: mock.ToolCall{Name: "write_file", Args: jsonArgs("file_path", path, "content", v1)},
			Op: state.EditCreate, Want: v1, Size: len(v1)},
		{Call: mock.ToolCall{Name: "read_file", Args: jsonArgs("file_path", path)}, Want: v1},
		{Call: mock.ToolCall{Name: "replace", Args: jsonArgs("file_path", path,
			"instruction", "Replace line 24 of the edits scenario file with the edited block.",
			"old_string", old, "new_string", repl)},
			Op: state.EditModify, Want: edited(v1, old, repl), Size: len(repl)},
	}
}

func (geminiCLI) streamsArguments() bool { return false }

// Cline on Chat Completions: read_files and apply_patch (a function tool
// taking the patch as "input").
func (clineCLI) editSteps(path, v1, old, repl string) []editStep {
	add := addFilePatch(path, v1)
	upd := updateFilePatch(path, v1, old, repl)
	// Cline's apply_patch writes an added file without its last newline
	// (and an update keeps that).
	v2 := strings.TrimSuffix(edited(v1, old, repl), "\n")
	v1 = strings.TrimSuffix(v1, "\n")
	return []editStep{
		{Call: mock.ToolCall{Name: "apply_patch", Args: jsonArgs("input", add)}, Op: state.EditCreate, Want: v1, Size: patchSection(add)},
		{Call: clineRead(path), Want: v1},
		{Call: mock.ToolCall{Name: "apply_patch", Args: jsonArgs("input", upd)}, Op: state.EditModify, Want: v2, Size: patchSection(upd)},
	}
}

func (clineCLI) streamsArguments() bool { return true }

// Cline on the Messages API: read_files and editor (no old_text creates the
// file, old_text and new_text replace).
func (clineAnthropic) editSteps(path, v1, old, repl string) []editStep {
	return []editStep{
		{Call: mock.ToolCall{Name: "editor", Args: jsonArgs("path", path, "new_text", v1)},
			Op: state.EditCreate, Want: v1, Size: len(v1)},
		{Call: clineRead(path), Want: v1},
		{Call: mock.ToolCall{Name: "editor", Args: jsonArgs("path", path, "old_text", old, "new_text", repl)},
			Op: state.EditModify, Want: edited(v1, old, repl), Size: len(repl)},
	}
}

func clineRead(path string) mock.ToolCall {
	b, _ := json.Marshal(map[string]any{"files": []map[string]string{{"path": path}}})
	return mock.ToolCall{Name: "read_files", Args: string(b)}
}

// addFilePatch is an apply_patch patch creating path with content (whole
// lines).
func addFilePatch(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// updateFilePatch is an apply_patch patch replacing the whole lines old with
// repl in path, whose content is v1, with a line of context either side.
func updateFilePatch(path, v1, old, repl string) string {
	i := strings.Index(v1, old)
	before := strings.SplitAfter(strings.TrimSuffix(v1[:i], "\n"), "\n")
	after := strings.SplitAfter(strings.TrimSuffix(v1[i+len(old):], "\n"), "\n")
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Update File: " + path + "\n@@\n")
	b.WriteString(" " + strings.TrimSuffix(before[len(before)-1], "\n") + "\n")
	for _, l := range strings.SplitAfter(strings.TrimSuffix(old, "\n"), "\n") {
		b.WriteString("-" + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(repl, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	b.WriteString(" " + strings.TrimSuffix(after[0], "\n") + "\n")
	b.WriteString("*** End Patch\n")
	return b.String()
}

// patchSection is the size of a one-file patch's section: the patch
// without its Begin and End lines.
func patchSection(patch string) int {
	return len(patch) - len("*** Begin Patch\n") - len("*** End Patch\n")
}
