package routing

import (
	"fmt"
	"slices"

	"github.com/shepherd-proxy/shepherd/rewrite/apis"
)

// Table is a validated set of rules and named upstreams. It is immutable
// and safe for concurrent use.
type Table struct {
	rules     []Rule
	upstreams map[string]Upstream
}

// New checks rules and upstreams together and builds the table: upstream
// names are unique, rule names are unique (they label metrics), every
// rule's upstream exists (a named upstream or a built-in provider name),
// and a rule that names a wire API (api=) sends it only to an upstream of
// that API's family. It returns every problem found, one error each.
func New(rules []Rule, upstreams []Upstream) (*Table, []error) {
	var errs []error
	t := &Table{upstreams: map[string]Upstream{}}
	for _, u := range upstreams {
		if _, dup := t.upstreams[u.Name]; dup {
			errs = append(errs, fmt.Errorf("upstream %s is defined twice", u.Name))
			continue
		}
		t.upstreams[u.Name] = u
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("rule %s is defined twice (rule names label metrics and events)", r.Name))
			continue
		}
		seen[r.Name] = true
		if r.Upstream != "" {
			fam, ok := t.Family(r.Upstream)
			if !ok {
				errs = append(errs, fmt.Errorf("rule %s: upstream %q is neither a routing.upstreams name nor a built-in provider (%v)", r.Name, r.Upstream, Families()))
				continue
			}
			r.family = fam
			if r.API != "" {
				if d, err := apis.Lookup(r.API); err == nil && d.Provider != fam {
					errs = append(errs, fmt.Errorf("rule %s: api %s is a %s API but upstream %s serves %s", r.Name, r.API, d.Provider, r.Upstream, fam))
					continue
				}
			}
		}
		t.rules = append(t.rules, r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

// Parse parses and checks the lines of routing.rules and routing.upstreams
// (ParseRule, ParseUpstream, New), returning every problem found.
func Parse(ruleLines, upstreamLines []string) (*Table, []error) {
	var errs []error
	var ups []Upstream
	for _, l := range upstreamLines {
		u, err := ParseUpstream(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ups = append(ups, u)
	}
	var rules []Rule
	for _, l := range ruleLines {
		r, err := ParseRule(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rules = append(rules, r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return New(rules, ups)
}

// Empty reports whether the table has no rule (every request keeps
// today's behaviour). A nil table is empty.
func (t *Table) Empty() bool { return t == nil || len(t.rules) == 0 }

// UsesPhase reports whether a rule matches on the tool phase (PhaseOf
// then needs the request's parsed messages).
func (t *Table) UsesPhase() bool {
	if t == nil {
		return false
	}
	for i := range t.rules {
		if t.rules[i].Phase != PhaseNone {
			return true
		}
	}
	return false
}

// Upstreams returns the named upstreams, in name order.
func (t *Table) Upstreams() []Upstream {
	if t == nil {
		return nil
	}
	out := make([]Upstream, 0, len(t.upstreams))
	for _, u := range t.upstreams {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Upstream) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Family is the provider family an upstream name serves: a named
// upstream's api, or the name itself for a built-in provider.
func (t *Table) Family(upstream string) (string, bool) {
	if t != nil {
		if u, ok := t.upstreams[upstream]; ok {
			return u.API, true
		}
	}
	if slices.Contains(Families(), upstream) {
		return upstream, true
	}
	return "", false
}

// Match returns the first rule q matches, or nil. A rule with an upstream
// matches only requests of that upstream's family.
func (t *Table) Match(q *Request) *Rule {
	if t == nil {
		return nil
	}
	for i := range t.rules {
		if t.rules[i].matches(q) {
			return &t.rules[i]
		}
	}
	return nil
}
