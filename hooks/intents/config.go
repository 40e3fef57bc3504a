package intents

import (
	"path/filepath"
	"time"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "intents"

// FailMode says what governance does when it cannot decide.
type FailMode string

// Fail modes for intents.on_error.
const (
	// FailClosed refuses every tool call except the always-allowed ones.
	FailClosed FailMode = "closed"
	// FailOpen lets every tool call through (and audits it as such).
	FailOpen FailMode = "open"
)

// Values of intents.mode.
const (
	// ModeEnforce refuses and holds calls as the policy says.
	ModeEnforce = "enforce"
	// ModeObserve (shadow mode) lets every call through and records what
	// enforce mode would have refused or held.
	ModeObserve = "observe"
)

// Values of intents.unparsed_commands.
const (
	UnparsedRefuse = "refuse"
	UnparsedAllow  = "allow"
)

// Config is the intents section of the configuration (keys intents.*):
// the select_active_intent tool, the gatekeeper, and scope and constraint
// enforcement from a watched policy file.
type Config struct {
	// Enabled: key intents.enabled; auto (default: on when the policy file
	// exists at start-up), true or false. With true and no loadable file,
	// governance follows OnError.
	Enabled hooks.Switch `mapstructure:"enabled"`
	// File: key intents.file; the policy file, relative to WorkspaceRoot
	// unless absolute; default .orchestration/active_intents.yaml. It is
	// watched: changes apply without restart, a broken file keeps the last
	// good policy.
	File string `mapstructure:"file"`
	// WorkspaceRoot: key intents.workspace_root; the directory the agent's
	// file paths are relative to and must stay inside; default "" (the
	// proxy's working directory). When set it must be an existing directory.
	WorkspaceRoot string `mapstructure:"workspace_root"`
	// AlwaysAllowed: key intents.always_allowed; tools that bypass the
	// gatekeeper (may run with no intent selected); by default the common
	// agents' read-only tools. Constraints and scope still apply to them once
	// an intent is active.
	AlwaysAllowed []string `mapstructure:"always_allowed"`
	// PathArgs: key intents.path_args; which arguments of which tools are
	// file paths, as "Tool:argpath" entries (argpath a gjson path to a
	// string or array of strings) or "Tool:patch(argpath)" for an
	// apply_patch-format patch. Default: the common agents' file-writing
	// tools. Setting it replaces the whole default list.
	PathArgs []string `mapstructure:"path_args"`
	// ShellArgs: key intents.shell_args; which tools run shell commands, as
	// "Tool:argpath" (a script, or an array of scripts) or
	// "Tool:argv(argpath)" (an argument vector) entries, each optionally
	// followed by "@dirpath" naming the working-directory argument. The
	// files such a command writes (redirections, tee, sed -i, cp, mv, rm,
	// touch, mkdir, ln, truncate, dd, bash -c scripts) are checked against
	// the active intent's scope. Default: the common agents' shell tools.
	// Setting it replaces the whole default list.
	ShellArgs []string `mapstructure:"shell_args"`
	// UnparsedCommands: key intents.unparsed_commands; refuse (default) or
	// allow: what happens, while an intent is active, to a shell command
	// whose written files cannot all be known (dynamic targets like $VAR,
	// command substitution in a target, eval, xargs, a syntax error).
	UnparsedCommands string `mapstructure:"unparsed_commands"`
	// InferPathArgs: key intents.infer_path_args; default true. A tool
	// listed in neither always_allowed, path_args nor shell_args is still
	// scope-checked on the arguments that look like file paths (path,
	// file_path, filepath, filePath, notebook_path, paths, target_file,
	// files[].path, an apply_patch patch in input or patch).
	InferPathArgs bool `mapstructure:"infer_path_args"`
	// OnError: key intents.on_error; closed (default) or open: what happens
	// to tool calls when no valid policy could ever be loaded or the state
	// store is down. closed refuses every call except always-allowed ones,
	// with a reason saying the policy is unavailable; open lets them through.
	OnError FailMode `mapstructure:"on_error"`
	// Mode: key intents.mode; enforce (default) or observe. observe is
	// shadow mode: every call the policy would refuse or hold is let
	// through, audited as would_refuse / would_ask and reported on the live
	// feed (call.refused with observed true), so a policy can be tried on
	// real work first.
	Mode string `mapstructure:"mode"`
	// ApprovalTimeout: key intents.approval_timeout; how long a call an
	// ask rule holds waits for a person's decision; default 2m, at most
	// 24h. On expiry the call is refused with the reason "not approved in
	// time".
	ApprovalTimeout time.Duration `mapstructure:"approval_timeout"`
	// ApprovalPoll: key intents.approval_poll; how often the replica
	// holding a call reads its approval from the state store (a decision
	// may be made on any replica); default 500ms, at most
	// approval_timeout.
	ApprovalPoll time.Duration `mapstructure:"approval_poll"`
	// KeepAlive: key intents.keepalive; while a call is held, a streamed
	// reply gets an SSE comment line this often so the agent's client and
	// the proxies between keep the connection open; default 15s, at least
	// 10ms.
	KeepAlive time.Duration `mapstructure:"keepalive"`
	// Routes override File and WorkspaceRoot per wire API.
	Routes Routes `mapstructure:"routes"`
}

// Holds are the settings of held calls the turn engine needs
// (intents.approval_timeout, approval_poll, keepalive).
type Holds struct {
	Timeout, Poll, KeepAlive time.Duration
}

// Holds returns the section's settings for held calls.
func (c *Config) Holds() Holds {
	return Holds{Timeout: c.ApprovalTimeout, Poll: c.ApprovalPoll, KeepAlive: c.KeepAlive}
}

// Routes holds per-API overrides of the policy file and workspace root; an
// empty field inherits intents.file / intents.workspace_root. Its keys are
// the wire APIs' configuration names (hooks.API.Key).
type Routes struct {
	// Anthropic: keys intents.routes.anthropic.{file,workspace_root}
	// (Messages API).
	Anthropic Route `mapstructure:"anthropic"`
	// OpenAIChat: keys intents.routes.openai_chat.{file,workspace_root}.
	OpenAIChat Route `mapstructure:"openai_chat"`
	// OpenAIResponses: keys intents.routes.openai_responses.{file,workspace_root}.
	OpenAIResponses Route `mapstructure:"openai_responses"`
	// Gemini: keys intents.routes.gemini.{file,workspace_root}.
	Gemini Route `mapstructure:"gemini"`
}

// Route overrides where one API's policy comes from.
type Route struct {
	File          string `mapstructure:"file"`
	WorkspaceRoot string `mapstructure:"workspace_root"`
}

// byKey lists the routes by API configuration name, in key order.
func (r *Routes) byKey() []struct {
	key   string
	route Route
} {
	return []struct {
		key   string
		route Route
	}{
		{"anthropic", r.Anthropic}, {"openai_chat", r.OpenAIChat},
		{"openai_responses", r.OpenAIResponses}, {"gemini", r.Gemini},
	}
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{
		Enabled:          hooks.SwitchAuto,
		File:             ".orchestration/active_intents.yaml",
		WorkspaceRoot:    "",
		AlwaysAllowed:    DefaultAlwaysAllowed(),
		PathArgs:         DefaultPathArgs(),
		ShellArgs:        DefaultShellArgs(),
		UnparsedCommands: UnparsedRefuse,
		InferPathArgs:    true,
		OnError:          FailClosed,
		Mode:             ModeEnforce,
		ApprovalTimeout:  2 * time.Minute,
		ApprovalPoll:     500 * time.Millisecond,
		KeepAlive:        15 * time.Second,
	}
}

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	switch c.Enabled {
	case hooks.SwitchAuto, hooks.SwitchOn, hooks.SwitchOff:
	default:
		p.Add("intents.enabled", "%q is not one of auto, true, false", c.Enabled)
	}
	if c.File == "" {
		p.Add("intents.file", "must not be empty")
	}
	if c.WorkspaceRoot != "" && !filepath.IsAbs(c.WorkspaceRoot) {
		p.Add("intents.workspace_root", "%q must be an absolute path (or empty for the working directory)", c.WorkspaceRoot)
	}
	for _, name := range c.AlwaysAllowed {
		if !hooks.ToolName(name) {
			p.Add("intents.always_allowed", "%q is not a valid tool name (1-64 letters, digits, _ or -)", name)
		}
	}
	if _, err := policy.ParsePathArgs(c.PathArgs); err != nil {
		p.Add("intents.path_args", "%v", err)
	}
	if _, err := policy.ParseShellArgs(c.ShellArgs); err != nil {
		p.Add("intents.shell_args", "%v", err)
	}
	switch c.UnparsedCommands {
	case UnparsedRefuse, UnparsedAllow:
	default:
		p.Add("intents.unparsed_commands", "%q is not one of refuse, allow", c.UnparsedCommands)
	}
	switch c.OnError {
	case FailClosed, FailOpen:
	default:
		p.Add("intents.on_error", "%q is not one of closed, open", c.OnError)
	}
	switch c.Mode {
	case ModeEnforce, ModeObserve:
	default:
		p.Add("intents.mode", "%q is not one of enforce, observe", c.Mode)
	}
	if c.ApprovalTimeout <= 0 || c.ApprovalTimeout > 24*time.Hour {
		p.Add("intents.approval_timeout", "%v must be more than 0 and at most 24h", c.ApprovalTimeout)
	}
	if c.ApprovalPoll <= 0 || c.ApprovalPoll > c.ApprovalTimeout && c.ApprovalTimeout > 0 {
		p.Add("intents.approval_poll", "%v must be more than 0 and at most intents.approval_timeout", c.ApprovalPoll)
	}
	if c.KeepAlive < 10*time.Millisecond {
		p.Add("intents.keepalive", "%v must be at least 10ms", c.KeepAlive)
	}
	for _, r := range c.Routes.byKey() {
		if r.route.WorkspaceRoot != "" && !filepath.IsAbs(r.route.WorkspaceRoot) {
			p.Add("intents.routes."+r.key+".workspace_root", "%q must be an absolute path", r.route.WorkspaceRoot)
		}
	}
	return p
}

// OwnedTools implements hooks.Section: select_active_intent when intents
// may run.
func (c *Config) OwnedTools() []string {
	if c.Enabled == hooks.SwitchOff {
		return nil
	}
	return []string{IntentTool}
}

// PolicySource is where one wire API's policy comes from: an absolute policy
// file and an absolute workspace root.
type PolicySource struct {
	File string
	Root string
}

// PolicySources resolves the policy file and workspace root of each wire API
// (keys anthropic, openai_chat, openai_responses, gemini), applying the
// per-route overrides. wd is the working directory used when no root is set.
func (c *Config) PolicySources(wd string) map[string]PolicySource {
	out := map[string]PolicySource{}
	for _, r := range c.Routes.byKey() {
		root, file := c.WorkspaceRoot, c.File
		if r.route.WorkspaceRoot != "" {
			root = r.route.WorkspaceRoot
		}
		if r.route.File != "" {
			file = r.route.File
		}
		if root == "" {
			root = wd
		}
		root = filepath.Clean(root)
		if !filepath.IsAbs(file) {
			file = filepath.Join(root, file)
		}
		out[r.key] = PolicySource{File: filepath.Clean(file), Root: root}
	}
	return out
}
