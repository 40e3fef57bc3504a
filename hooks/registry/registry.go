// Package registry is the one list of shepherd's features (hook plug-ins):
// their configuration sections, in chain order. It provisions them from a
// validated configuration, builds each wire API's chain from them, and
// closes them at shutdown. The proxy builds its chains from here only.
//
// Adding a feature is one package under hooks/ (its Config implementing
// hooks.Section, its hook, its slot, its metrics, its tests) and one field
// in Sections.
package registry

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/budgets"
	"github.com/shepherd-proxy/shepherd/hooks/compaction"
	"github.com/shepherd-proxy/shepherd/hooks/edits"
	"github.com/shepherd-proxy/shepherd/hooks/format"
	"github.com/shepherd-proxy/shepherd/hooks/gating"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/prose"
	"github.com/shepherd-proxy/shepherd/hooks/recovery"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
)

// Sections holds every feature's configuration section: one field per
// feature, its Config under the section's key, in chain order (request
// hooks run in this order, reply hooks in reverse). Intents comes first so
// its rule and reminder precede topics', and on the reply side topics
// claims create_new_topic before intents checks the rest; recovery comes
// last of the reply hooks so it sees a truncated reply first. Edits only
// watches calls and outcomes: its place changes nothing.
//
// The opt-in context features sit around them: budgets first, so a
// request over its budget is refused before anything is injected, and last
// on the reply side, so its call caps apply to the calls no other hook
// decided; gating, then compaction, reshape the history before the
// reminders are added; format's instruction follows intents' and topics'
// reminders, and prose's nudge comes last of the texts appended.
//
// The configuration (package config) embeds Sections, so a section's keys
// are configuration keys like any other: defaults, SHEPHERD_* variables,
// flags, the unknown-key check and validation once at load all apply,
// without package config naming any feature.
type Sections struct {
	Budgets    budgets.Config    `mapstructure:"budgets"`
	Gating     gating.Config     `mapstructure:"gating"`
	Compaction compaction.Config `mapstructure:"compaction"`
	Intents    intents.Config    `mapstructure:"intents"`
	Topics     topics.Config     `mapstructure:"topics"`
	Format     format.Config     `mapstructure:"format"`
	Prose      prose.Config      `mapstructure:"prose"`
	Recovery   recovery.Config   `mapstructure:"recovery"`
	Edits      edits.Config      `mapstructure:"edits"`
}

// Entry is one feature of the registry.
type Entry struct {
	// Name is the section's key (and the feature's name).
	Name    string
	Section hooks.Section
}

// List returns s's sections in chain order. The entries point into s.
func (s *Sections) List() []Entry {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	out := make([]Entry, 0, t.NumField())
	for i := range t.NumField() {
		sec, ok := v.Field(i).Addr().Interface().(hooks.Section)
		if !ok {
			panic(fmt.Sprintf("registry: field %s does not implement hooks.Section", t.Field(i).Name))
		}
		out = append(out, Entry{Name: t.Field(i).Tag.Get("mapstructure"), Section: sec})
	}
	return out
}

// Defaults returns every section at its defaults.
func Defaults() Sections {
	var s Sections
	for _, e := range s.List() {
		e.Section.SetDefaults()
	}
	return s
}

// Validate returns the problems of every section, in chain order.
func (s *Sections) Validate() []hooks.Problem {
	var out []hooks.Problem
	for _, e := range s.List() {
		out = append(out, e.Section.Validate()...)
	}
	return out
}

// Plugins are the provisioned features, in chain order.
type Plugins struct {
	names   []string
	plugins []hooks.Plugin
}

// Provision builds the features s enables. Each gets env, with Owned set to
// the tools the other enabled features own. On error (each feature's errors
// name it or its keys), the features already provisioned are closed.
func Provision(s *Sections, env hooks.Env) (*Plugins, error) {
	entries := s.List()
	ps := &Plugins{}
	for i, e := range entries {
		fe := env
		fe.Owned = nil
		for j, o := range entries {
			if j != i {
				fe.Owned = append(fe.Owned, o.Section.OwnedTools()...)
			}
		}
		p, err := e.Section.Provision(fe)
		if err != nil {
			return nil, errors.Join(err, ps.Close())
		}
		if p != nil {
			ps.names = append(ps.names, e.Name)
			ps.plugins = append(ps.plugins, p)
		}
	}
	return ps, nil
}

// Chain builds api's chain: each feature's hook for it, in chain order.
func (ps *Plugins) Chain(api hooks.API) (*hooks.Chain, error) {
	var hs []hooks.Hook
	for _, p := range ps.plugins {
		h, err := p.Hook(api)
		if err != nil {
			return nil, err
		}
		if h != nil {
			hs = append(hs, h)
		}
	}
	return hooks.NewChain(hs...), nil
}

// Report is one feature's readiness detail (hooks.Reporter).
type Report struct {
	Name     string
	Detail   any
	Degraded bool
}

// Reports returns the reports of the features that have one, in chain order.
func (ps *Plugins) Reports() []Report {
	if ps == nil {
		return nil
	}
	var out []Report
	for _, p := range ps.plugins {
		if r, ok := p.(hooks.Reporter); ok {
			if name, detail, degraded := r.Report(); name != "" {
				out = append(out, Report{Name: name, Detail: detail, Degraded: degraded})
			}
		}
	}
	return out
}

// Names lists the provisioned features, in chain order.
func (ps *Plugins) Names() []string {
	if ps == nil {
		return nil
	}
	return slices.Clone(ps.names)
}

// Close closes every feature, in reverse order. It is idempotent as the
// features' Close are.
func (ps *Plugins) Close() error {
	if ps == nil {
		return nil
	}
	var errs []error
	for i := len(ps.plugins) - 1; i >= 0; i-- {
		if err := ps.plugins[i].Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ps.names[i], err))
		}
	}
	return errors.Join(errs...)
}
