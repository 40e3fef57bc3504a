package config

import "github.com/shepherd-proxy/shepherd/routing"

// Routing configures the routing rules that pick a model and an upstream
// per request (docs/routing.md, package routing).
//
// Both keys are lists of one-line entries, the form pricing.models uses:
// the loader's keys are values and string lists (each settable from its
// SHEPHERD_* variable and flags), and a line per rule keeps the order of
// the rules visible and greppable. From the environment the lists are
// comma-separated, so a refusal message set there cannot hold a comma.
type Routing struct {
	// Upstreams: key routing.upstreams; named upstreams beside the
	// built-in ones (upstreams.*), each "<name> api=<anthropic|openai|
	// gemini> base_url=<url> [credential_env=<VAR>]". credential_env names
	// an environment variable read once at start-up whose value replaces
	// the agent's credential on requests sent to that upstream. Default
	// none.
	Upstreams []string `mapstructure:"upstreams"`
	// Rules: key routing.rules; ordered rules, the first a request
	// matches wins, each "<name> [model=<glob>] [agent=<glob>]
	// [api=<wire API>] [kind=main|side|subagent] [min_input_tokens=<n>]
	// [max_input_tokens=<n>] [phase=prompt|tool_results|edit]
	// [set_model=<model>] [upstream=<name>] [refuse=\"<message>\"]
	// [sticky=false]". Default none: every request goes to its provider
	// with the model it names.
	Rules []string `mapstructure:"rules"`
}

// Table parses the validated routing section (nil when it has no rule).
// Call it on a Config that passed Validate.
func (r *Routing) Table() (*routing.Table, error) {
	if len(r.Rules) == 0 && len(r.Upstreams) == 0 {
		return nil, nil
	}
	t, errs := routing.Parse(r.Rules, r.Upstreams)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return t, nil
}

// validate reports every problem of the routing section under its key:
// a line's own problems, then the rules against the upstreams.
func (r *Routing) validate(p *problems) {
	var ups []routing.Upstream
	for _, l := range r.Upstreams {
		u, err := routing.ParseUpstream(l)
		if err != nil {
			p.add("routing.upstreams", "%v", err)
			continue
		}
		ups = append(ups, u)
	}
	var rules []routing.Rule
	bad := false
	for _, l := range r.Rules {
		rule, err := routing.ParseRule(l)
		if err != nil {
			p.add("routing.rules", "%v", err)
			bad = true
			continue
		}
		rules = append(rules, rule)
	}
	if bad || len(ups) != len(r.Upstreams) {
		return // references are checked once every line parses
	}
	if _, errs := routing.New(rules, ups); len(errs) > 0 {
		for _, err := range errs {
			p.add("routing.rules", "%v", err)
		}
	}
}
