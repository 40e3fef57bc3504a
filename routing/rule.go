package routing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/ruleline"
)

// Kind is what a request is to its agent.
type Kind string

// Request kinds. A side request is the codec's side-request check
// (rewrite.SideRequest: no tools, tool calls forbidden, or JSON output); a
// subagent request carries Claude Code's x-claude-code-agent-id or Codex's
// x-openai-subagent header; anything else is the main conversation.
const (
	KindMain     Kind = "main"
	KindSide     Kind = "side"
	KindSubagent Kind = "subagent"
)

// Phase is where a request stands in the agent's tool loop.
type Phase string

// Tool phases (PhaseOf). PhaseEdit is a PhaseToolResults whose results all
// answer file-edit calls: a rule with phase=tool_results matches it too.
const (
	PhaseNone        Phase = ""
	PhasePrompt      Phase = "prompt"
	PhaseToolResults Phase = "tool_results"
	PhaseEdit        Phase = "edit"
)

// Rule is one routing rule (key routing.rules): what it matches and what it
// does. The zero value of a match field matches anything.
//
// Syntax: "<name> [match…] action…", each a key=value pair; values with
// blanks are Go double-quoted strings. Match keys: model and agent (globs,
// doublestar syntax), api (a wire API name), kind (main, side, subagent),
// min_input_tokens and max_input_tokens (estimated: body bytes / 4),
// phase (prompt, tool_results, edit). Action keys: set_model, upstream (a
// named upstream or a built-in provider name), refuse (a message: the
// request is answered 403 in the API's error shape), sticky (true by
// default; false lets the rule switch a session that began elsewhere).
type Rule struct {
	Name string

	Model          string
	Agent          string
	API            string
	Kind           Kind
	MinInputTokens int64
	MaxInputTokens int64
	Phase          Phase

	SetModel string
	Upstream string
	Refuse   string
	Sticky   bool

	// family is the provider family of Upstream, set by New: the rule
	// matches only requests of that family's APIs.
	family string
}

// matchKeys are the keys of a rule that restrict what it matches.
var matchKeys = []string{"model", "agent", "api", "kind", "min_input_tokens", "max_input_tokens", "phase"}

// ParseRule parses one routing.rules line. It checks the rule alone; New
// checks it against the upstreams.
func ParseRule(line string) (Rule, error) {
	name, kv, order, err := ruleline.Fields(line)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Name: name, Sticky: true}
	if !ruleline.ValidName(name) {
		return r, fmt.Errorf("rule name %q: use letters, digits, - _ . (at most 64)", name)
	}
	fail := func(format string, args ...any) (Rule, error) {
		return r, fmt.Errorf("rule %s: "+format, append([]any{name}, args...)...)
	}
	for _, k := range order {
		v := kv[k]
		switch k {
		case "model", "agent":
			if v == "" || !doublestar.ValidatePattern(v) {
				return fail("%s %q is not a valid glob", k, v)
			}
			if k == "model" {
				r.Model = v
			} else {
				r.Agent = v
			}
		case "api":
			if _, err := apis.Lookup(v); err != nil {
				return fail("%v", err)
			}
			r.API = v
		case "kind":
			if r.Kind = Kind(v); !slices.Contains([]Kind{KindMain, KindSide, KindSubagent}, r.Kind) {
				return fail("kind %q is not one of main, side, subagent", v)
			}
		case "min_input_tokens", "max_input_tokens":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fail("%s %q is not a non-negative integer", k, v)
			}
			if k == "min_input_tokens" {
				r.MinInputTokens = n
			} else {
				r.MaxInputTokens = n
			}
		case "phase":
			if r.Phase = Phase(v); !slices.Contains([]Phase{PhasePrompt, PhaseToolResults, PhaseEdit}, r.Phase) {
				return fail("phase %q is not one of prompt, tool_results, edit", v)
			}
		case "set_model":
			if v == "" || strings.ContainsAny(v, " \t\r\n\"") {
				return fail("set_model %q is not a model name", v)
			}
			r.SetModel = v
		case "upstream":
			if v == "" {
				return fail("upstream is empty")
			}
			r.Upstream = v
		case "refuse":
			if strings.TrimSpace(v) == "" {
				return fail("refuse needs a message (the agent is told why)")
			}
			r.Refuse = v
		case "sticky":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fail("sticky %q is not true or false", v)
			}
			r.Sticky = b
		default:
			return fail("unknown key %q (match: %s; action: set_model, upstream, refuse, sticky)", k, strings.Join(matchKeys, ", "))
		}
	}
	switch {
	case r.MaxInputTokens > 0 && r.MinInputTokens > r.MaxInputTokens:
		return fail("min_input_tokens %d is above max_input_tokens %d", r.MinInputTokens, r.MaxInputTokens)
	case r.Refuse != "" && (r.SetModel != "" || r.Upstream != ""):
		return fail("refuse cannot be combined with set_model or upstream")
	case r.Refuse != "" && kv["sticky"] != "":
		return fail("sticky has no meaning on a refusal (refusals always apply)")
	case r.Refuse == "" && r.SetModel == "" && r.Upstream == "":
		return fail("does nothing: give set_model, upstream or refuse")
	}
	return r, nil
}

// matches reports whether the rule applies to q.
func (r *Rule) matches(q *Request) bool {
	switch {
	case r.family != "" && r.family != q.Family,
		r.API != "" && r.API != q.API,
		r.Kind != "" && r.Kind != q.Kind,
		r.MinInputTokens > 0 && q.InputTokens < r.MinInputTokens,
		r.MaxInputTokens > 0 && q.InputTokens > r.MaxInputTokens,
		r.Phase != "" && !q.Phase.is(r.Phase),
		r.Model != "" && !globMatch(r.Model, q.Model),
		r.Agent != "" && !globMatch(r.Agent, q.Agent):
		return false
	}
	return true
}

// is reports whether phase p satisfies a rule asking for want: exactly,
// or an edit phase for a rule asking for tool results.
func (p Phase) is(want Phase) bool {
	return p == want || (want == PhaseToolResults && p == PhaseEdit)
}

// globMatch matches name against a validated pattern.
func globMatch(pattern, name string) bool {
	ok, _ := doublestar.Match(pattern, name)
	return ok
}
