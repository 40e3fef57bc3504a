// Package recognize tells which tool calls write files and what they ask
// for each file: incrementally, while a call's arguments stream (the path
// of the file, as soon as it is complete: Table.Watch, Watch.Feed), and
// from a complete call (the new content, the replacements or the patch,
// per file: Table.Edits, Edit.Apply, Edit.CallDiff). It also reads a read
// tool's result as a file's whole content when it is whole (Table.Read),
// so that the content before an edit can be known.
//
// It is pure: it never touches the filesystem or the network. A Table is
// immutable and safe for concurrent use; a Watch belongs to one call and
// is not.
//
// # Tools
//
// A Rule says how a tool writes: its Kind (write, edit, multiedit,
// notebook, patch, search_replace, insert, editor, shell; read for read
// tools) and where its arguments are. Builtin lists the common agents'
// tools as their sources define them:
//
//   - Claude Code: Write, Edit, MultiEdit, NotebookEdit, Read (results
//     numbered "N\tline", or "N:line" when lines start with tabs, older
//     versions "     N→line"; <system-reminder> notes around), Bash.
//   - Codex CLI: apply_patch (free-form custom tool on the Responses API,
//     or a JSON function {"input"}), shell {command: argv, workdir},
//     shell_command {command, workdir}, exec_command {cmd, workdir},
//     local_shell, container.exec; apply_patch run through a shell
//     (["apply_patch", patch], or a heredoc, possibly after "cd dir &&")
//     is read as the patch.
//   - gemini-cli: write_file, replace {allow_multiple, formerly
//     expected_replacements}, read_file {file_path, start_line, end_line},
//     run_shell_command {command, dir_path}.
//   - Roo Code: write_to_file, apply_diff (SEARCH/REPLACE blocks with
//     :start_line:), insert_content, search_and_replace (operations, regex,
//     line range), edit, edit_file, search_replace, apply_patch {"patch"},
//     read_file (XML or native results with "N | " lines),
//     execute_command.
//   - Cline: write_to_file, replace_in_file ("------- SEARCH" blocks),
//     read_file, execute_command; Cline CLI: editor {path, old_text,
//     new_text, insert_line} (no command), apply_patch {input},
//     run_commands {commands}.
//   - str_replace_editor-style tools (command create, str_replace, insert,
//     undo_edit, view) under their usual names.
//
// Configuration adds rules or replaces built-in ones (ParseRules, then
// NewTable with the built-in rules first).
//
// # Streaming
//
// Watch.Feed is an incremental scanner over the JSON text of the
// arguments (or a free-form call's raw text): it follows the top-level
// members a rule names, decodes only the ones it needs (the path, an
// editor's command, a patch), skips everything else including nested
// values and large contents, and keeps no more than the current path or
// patch header line. Escapes and \u sequences split across fragments are
// handled; a fragment that completes nothing costs O(len) and allocates
// nothing. Whatever the split of the arguments into fragments, the same
// files are announced, each once.
//
// # Limits
//
// Paths are as the call gives them (relative to the agent's working
// directory, or absolute); the caller normalises them. A notebook edit's
// result is not computed (Apply returns ErrUnsupported). CallDiff cannot
// know line numbers: its hunks are located by their text, and a
// replacement inside a line shows the replaced text, not the whole line.
// A shell command's files are known only when the command is complete,
// and only those the shell analysis (package shell) can see.
package recognize
