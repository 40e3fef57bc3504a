package intents

// DefaultAlwaysAllowed lists the read-only and planning tools of the common
// agents (Claude Code, Codex CLI, gemini-cli, Cline, Roo Code): they may run
// before an intent is selected and their paths are not scope-checked.
func DefaultAlwaysAllowed() []string {
	return []string{
		// Claude Code
		"Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite", "BashOutput", "ExitPlanMode",
		// Roo Code, Cline (VS Code)
		"read_file", "list_files", "search_files", "list_code_definition_names", "ask_followup_question",
		"codebase_search", "attempt_completion", "update_todo_list", "plan_mode_respond",
		// Cline CLI
		"read_files", "search_codebase",
		// gemini-cli
		"read_many_files", "list_directory", "glob", "search_file_content", "google_web_search", "web_fetch", "write_todos",
		// Codex CLI
		"update_plan", "view_image", "list_dir", "grep_files",
	}
}

// DefaultPathArgs lists the file-path arguments of the common agents'
// file-writing tools.
func DefaultPathArgs() []string {
	return []string{
		// Claude Code
		"Write:file_path", "Edit:file_path", "MultiEdit:file_path", "NotebookEdit:notebook_path",
		// Roo Code, Cline
		"write_to_file:path", "apply_diff:path", "insert_content:path", "search_and_replace:path", "replace_in_file:path",
		// Cline CLI
		"editor:path",
		// gemini-cli
		"write_file:file_path", "replace:file_path",
		// Codex CLI and Cline CLI (function or custom tool)
		"apply_patch:patch(input)",
	}
}

// DefaultShellArgs lists the common agents' shell tools.
func DefaultShellArgs() []string {
	return []string{
		// Claude Code
		"Bash:command",
		// Codex CLI
		"shell:argv(command)@workdir", "container.exec:argv(command)@workdir",
		"local_shell:argv(action.command)@action.working_directory", "exec_command:cmd@workdir",
		"shell_command:command@workdir",
		// gemini-cli
		"run_shell_command:command@dir_path|directory",
		// Roo Code, Cline
		"execute_command:command@cwd",
		// Cline CLI
		"run_commands:commands",
	}
}
