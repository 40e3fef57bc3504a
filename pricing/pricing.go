// Package pricing turns token usage into list-price cost: a table of
// per-model prices (the common models' public list prices, built in, and
// overridable in configuration) looked up by model name.
package pricing

import (
	"regexp"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input      float64 `mapstructure:"input" json:"input"`
	Output     float64 `mapstructure:"output" json:"output"`
	CacheRead  float64 `mapstructure:"cache_read" json:"cache_read"`
	CacheWrite float64 `mapstructure:"cache_write" json:"cache_write"`
}

// Table maps model names to prices. The zero Table prices nothing. It is
// read-only once built and safe for concurrent use.
type Table struct {
	prices map[string]Price
}

// New builds the table of the built-in prices with each of rules (the
// pricing.models configuration, see ParseRule) applied over them in order.
// It fails on the first rule that does not parse.
func New(rules []string) (*Table, error) {
	t := &Table{prices: make(map[string]Price, len(builtin)+len(rules))}
	for name, p := range builtin {
		t.prices[name] = p
	}
	for _, r := range rules {
		name, p, err := parseRule(r, t.prices)
		if err != nil {
			return nil, err
		}
		t.prices[name] = p
	}
	return t, nil
}

// Builtin returns the table of the built-in prices only.
func Builtin() *Table {
	t, _ := New(nil) // no rules: cannot fail
	return t
}

// Cost returns the cost of u at model's price, and whether the model has
// a price (an unknown model costs 0). The model is found as Lookup finds
// it.
func (t *Table) Cost(model string, u conv.Usage) (usd float64, known bool) {
	p, _, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	const perTok = 1e-6
	return perTok * (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite), true
}

// dated matches the date or version suffix providers append to a model
// name: Anthropic's -20250929, OpenAI's -2025-04-14, Vertex's @20250929.
var dated = regexp.MustCompile(`(-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8}|@\d{4}-\d{2}-\d{2})$`)

// Lookup finds model's price and the table name it was found under, by
// these rules, first match wins:
//  1. the name as given, lower-cased, after its last "/" (Gemini's
//     models/gemini-2.5-pro, a router's anthropic/claude-…);
//  2. that name without a date suffix (claude-sonnet-4-5-20250929,
//     gpt-4.1-2025-04-14, claude-opus-4-1@20250805);
//  3. the longest table name that the name extends with "-" and a suffix
//     not starting with a digit (gemini-2.5-flash-preview-09-2025,
//     claude-3-5-haiku-latest, gpt-5-codex-high), so a newer version
//     (claude-opus-4-9) is never priced as an older one (claude-opus-4).
func (t *Table) Lookup(model string) (Price, string, bool) {
	if t == nil || model == "" {
		return Price{}, "", false
	}
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if p, ok := t.prices[name]; ok {
		return p, name, true
	}
	if loc := dated.FindStringIndex(name); loc != nil {
		name = name[:loc[0]]
		if p, ok := t.prices[name]; ok {
			return p, name, true
		}
	}
	best := ""
	for known := range t.prices {
		if len(known) > len(best) && extends(name, known) {
			best = known
		}
	}
	if best == "" {
		return Price{}, "", false
	}
	return t.prices[best], best, true
}

// extends reports whether name is base followed by "-" and a suffix that
// does not start with a digit.
func extends(name, base string) bool {
	if len(name) < len(base)+2 || !strings.HasPrefix(name, base) || name[len(base)] != '-' {
		return false
	}
	c := name[len(base)+1]
	return c < '0' || c > '9'
}
