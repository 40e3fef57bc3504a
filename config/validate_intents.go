package config

import (
	"path/filepath"

	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
)

func (in *Intents) validate(p *problems) {
	switch in.Enabled {
	case SwitchAuto, SwitchOn, SwitchOff:
	default:
		p.add("intents.enabled", "%q is not one of auto, true, false", in.Enabled)
	}
	if in.File == "" {
		p.add("intents.file", "must not be empty")
	}
	if in.WorkspaceRoot != "" && !filepath.IsAbs(in.WorkspaceRoot) {
		p.add("intents.workspace_root", "%q must be an absolute path (or empty for the working directory)", in.WorkspaceRoot)
	}
	for _, name := range in.AlwaysAllowed {
		if !isToolName(name) {
			p.add("intents.always_allowed", "%q is not a valid tool name (1-64 letters, digits, _ or -)", name)
		}
	}
	if _, err := policy.ParsePathArgs(in.PathArgs); err != nil {
		p.add("intents.path_args", "%v", err)
	}
	if _, err := policy.ParseShellArgs(in.ShellArgs); err != nil {
		p.add("intents.shell_args", "%v", err)
	}
	switch in.UnparsedCommands {
	case UnparsedRefuse, UnparsedAllow:
	default:
		p.add("intents.unparsed_commands", "%q is not one of refuse, allow", in.UnparsedCommands)
	}
	switch in.OnError {
	case FailClosed, FailOpen:
	default:
		p.add("intents.on_error", "%q is not one of closed, open", in.OnError)
	}
	for _, r := range []struct {
		key string
		r   IntentRoute
	}{
		{"intents.routes.anthropic", in.Routes.Anthropic},
		{"intents.routes.openai_chat", in.Routes.OpenAIChat},
		{"intents.routes.openai_responses", in.Routes.OpenAIResponses},
		{"intents.routes.gemini", in.Routes.Gemini},
	} {
		if r.r.WorkspaceRoot != "" && !filepath.IsAbs(r.r.WorkspaceRoot) {
			p.add(r.key+".workspace_root", "%q must be an absolute path", r.r.WorkspaceRoot)
		}
	}
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
func (in *Intents) PolicySources(wd string) map[string]PolicySource {
	resolve := func(r IntentRoute) PolicySource {
		root, file := in.WorkspaceRoot, in.File
		if r.WorkspaceRoot != "" {
			root = r.WorkspaceRoot
		}
		if r.File != "" {
			file = r.File
		}
		if root == "" {
			root = wd
		}
		root = filepath.Clean(root)
		if !filepath.IsAbs(file) {
			file = filepath.Join(root, file)
		}
		return PolicySource{File: filepath.Clean(file), Root: root}
	}
	return map[string]PolicySource{
		"anthropic":        resolve(in.Routes.Anthropic),
		"openai_chat":      resolve(in.Routes.OpenAIChat),
		"openai_responses": resolve(in.Routes.OpenAIResponses),
		"gemini":           resolve(in.Routes.Gemini),
	}
}

// Values of intents.unparsed_commands.
const (
	UnparsedRefuse = "refuse"
	UnparsedAllow  = "allow"
)

func (f *Features) validate(p *problems) {
	switch f.SideRequests {
	case SideRequestsPass, SideRequestsInject:
	default:
		p.add("features.side_requests", "%q is not one of pass, inject", f.SideRequests)
	}
}
