package recognize

// Builtin returns the rules of the common agents' file tools, as their
// sources define them (Claude Code, Codex CLI, gemini-cli, Roo Code,
// Cline, Cline CLI). A tool name several agents share (read_file,
// write_to_file, apply_patch) has one rule that reads all their forms.
func Builtin() []Rule {
	return []Rule{
		// Claude Code.
		{Tool: "Write", Kind: KindWrite, PathArg: "file_path", ContentArg: "content"},
		{Tool: "Edit", Kind: KindEdit, PathArg: "file_path", OldArg: "old_string", NewArg: "new_string", AllArg: "replace_all"},
		{Tool: "MultiEdit", Kind: KindMultiEdit, PathArg: "file_path", EditsArg: "edits"},
		{Tool: "NotebookEdit", Kind: KindNotebook, PathArg: "notebook_path", ContentArg: "new_source", CellArg: "cell_id", ModeArg: "edit_mode", CellTypeArg: "cell_type"},
		{Tool: "Read", Kind: KindRead, PathArg: "file_path", Format: FormatNumbered},
		{Tool: "Bash", Kind: KindShell, CommandArg: "command"},

		// Codex CLI (apply_patch is also Cline CLI's and Roo Code's): the
		// patch is the free-form input, or the JSON function's "input"
		// (Roo: "patch").
		{Tool: "apply_patch", Kind: KindPatch, InputArg: "input,patch"},
		{Tool: "shell", Kind: KindShell, CommandArg: "command", Argv: true, DirArg: "workdir"},
		{Tool: "container.exec", Kind: KindShell, CommandArg: "command", Argv: true, DirArg: "workdir"},
		{Tool: "local_shell", Kind: KindShell, CommandArg: "action.command", Argv: true, DirArg: "action.working_directory"},
		{Tool: "shell_command", Kind: KindShell, CommandArg: "command", DirArg: "workdir"},
		{Tool: "exec_command", Kind: KindShell, CommandArg: "cmd", DirArg: "workdir"},

		// gemini-cli.
		{Tool: "write_file", Kind: KindWrite, PathArg: "file_path", ContentArg: "content"},
		// replace: allow_multiple (0.61), formerly expected_replacements.
		{Tool: "replace", Kind: KindEdit, PathArg: "file_path", OldArg: "old_string", NewArg: "new_string",
			AllArg: "allow_multiple", CountArg: "expected_replacements"},
		// run_shell_command: dir_path (0.61), formerly directory.
		{Tool: "run_shell_command", Kind: KindShell, CommandArg: "command", DirArg: "dir_path,directory"},
		// read_file: gemini-cli's {file_path, start_line, end_line}
		// (formerly absolute_path, offset, limit), Roo Code's and Cline's
		// {path}.
		{Tool: "read_file", Kind: KindRead, PathArg: "file_path,absolute_path,path", Format: FormatPlain,
			OffsetArg: "start_line,offset", LimitArg: "end_line,limit"},

		// Roo Code, Cline.
		{Tool: "write_to_file", Kind: KindWrite, PathArg: "path", ContentArg: "content"},
		{Tool: "apply_diff", Kind: KindSearchReplace, PathArg: "path", DiffArg: "diff"},
		{Tool: "insert_content", Kind: KindInsert, PathArg: "path", LineArg: "line", ContentArg: "content"},
		{Tool: "search_and_replace", Kind: KindEdit, PathArg: "path", OldArg: "search", NewArg: "replace", All: true,
			EditsArg: "operations", RegexArg: "use_regex", CaseArg: "ignore_case", FromArg: "start_line", ToArg: "end_line"},
		{Tool: "replace_in_file", Kind: KindSearchReplace, PathArg: "path", DiffArg: "diff", Ordered: true},
		{Tool: "execute_command", Kind: KindShell, CommandArg: "command", DirArg: "cwd"},
		// Roo Code's native edit tools.
		{Tool: "edit", Kind: KindEdit, PathArg: "file_path", OldArg: "old_string", NewArg: "new_string", AllArg: "replace_all"},
		{Tool: "edit_file", Kind: KindEdit, PathArg: "file_path", OldArg: "old_string", NewArg: "new_string", CountArg: "expected_replacements"},
		{Tool: "search_replace", Kind: KindEdit, PathArg: "file_path", OldArg: "old_string", NewArg: "new_string"},

		// Cline CLI: editor has no command (old_text replaced by new_text,
		// or new_text inserted before insert_line, or the file created
		// with new_text); the str_replace_editor form is read too.
		{Tool: "editor", Kind: KindEditor, PathArg: "path", CommandArg: "command", ContentArg: "file_text,new_text",
			OldArg: "old_text,old_str", NewArg: "new_text,new_str,insert_text", LineArg: "insert_line"},
		{Tool: "run_commands", Kind: KindShell, CommandArg: "commands"},
		// Anthropic's text editor tool, as agents built on it name it.
		{Tool: "str_replace_based_edit_tool", Kind: KindEditor, PathArg: "path", CommandArg: "command", ContentArg: "file_text",
			OldArg: "old_str", NewArg: "new_str,insert_text", LineArg: "insert_line"},
		{Tool: "str_replace_editor", Kind: KindEditor, PathArg: "path", CommandArg: "command", ContentArg: "file_text",
			OldArg: "old_str", NewArg: "new_str,insert_text", LineArg: "insert_line"},
	}
}
