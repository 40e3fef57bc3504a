package config

import "time"

// Defaults returns the configuration used when no file, environment variable
// or flag sets a key. It is the single source of the defaults stated in the
// field comments and in config.example.yaml (a test keeps the three in step).
// The result passes Validate.
func Defaults() Config {
	return Config{
		Listen: "127.0.0.1:8787",
		Upstreams: Upstreams{
			Anthropic: "https://api.anthropic.com",
			OpenAI:    "https://api.openai.com",
			Gemini:    "https://generativelanguage.googleapis.com",
		},
		State: State{
			Backend:     BackendMemory,
			TTL:         24 * time.Hour,
			MaxSessions: 10000,
			Redis: Redis{
				URL:        "",
				Addrs:      nil,
				MasterName: "",
				Timeout:    200 * time.Millisecond,
				KeyPrefix:  "shepherd",
			},
		},
		Limits: Limits{
			MaxBodyBytes:        32 << 20,
			UpstreamTimeout:     10 * time.Minute,
			StreamIdleTimeout:   5 * time.Minute,
			ShutdownGrace:       30 * time.Second,
			MaxConnsPerUpstream: 1024,
			ViewCacheBytes:      64 << 20,
			HeaderTimeout:       15 * time.Second,
			BodyTimeout:         5 * time.Minute,
			MaxConnsPerIP:       0,
		},
		Admin: Admin{
			Listen: "127.0.0.1:8788",
			Token:  "",
		},
		Log: Log{
			Level:  "info",
			Format: "json",
		},
		Session: Session{
			Header: "X-Session-Id",
		},
		Topics: Topics{
			Enabled:      true,
			ToolName:     "create_new_topic",
			Placement:    "last_user",
			MaxFollowups: -1, // deprecated alias of turns.max_followups: unset
		},
		Intents: Intents{
			Enabled:          SwitchAuto,
			File:             ".orchestration/active_intents.yaml",
			WorkspaceRoot:    "",
			AlwaysAllowed:    DefaultAlwaysAllowed(),
			PathArgs:         DefaultPathArgs(),
			ShellArgs:        DefaultShellArgs(),
			UnparsedCommands: UnparsedRefuse,
			InferPathArgs:    true,
			OnError:          FailClosed,
		},
		Recovery: Recovery{
			Enabled:         true,
			MaxAttempts:     2,
			MinOutputTokens: 1200,
			Strategy:        []string{"claude-3*=prefill", "*=instruction"},
			MaxOutputTokens: DefaultMaxOutputTokens(),
			Instruction:     "",
		},
		Features: Features{
			SideRequests: SideRequestsPass,
		},
		Turns: Turns{
			MaxFollowups:     4,
			MaxRefusalRounds: 4,
		},
	}
}

// DefaultMaxOutputTokens is the output maximum of current models, most
// specific pattern first.
func DefaultMaxOutputTokens() []string {
	return []string{
		"claude-3-7-sonnet*=64000", "claude-3-5*=8192", "claude-3*=4096",
		"claude-opus-4-0*=32000", "claude-opus-4-1*=32000", "claude-opus-4-2*=32000", "claude-*=64000",
		"gpt-4o*=16384", "gpt-4.1*=32768", "gpt-5*=128000", "o1*=100000", "o3*=100000", "o4*=100000",
		"gemini-2.0*=8192", "gemini-*=65536",
		"*=16384",
	}
}

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
		// gemini-cli
		"run_shell_command:command@directory",
		// Roo Code, Cline
		"execute_command:command@cwd",
		// Cline CLI
		"run_commands:commands",
	}
}
