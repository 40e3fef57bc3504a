package pricing

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseRule checks one pricing.models rule:
//
//	"<model> input=<usd> output=<usd> cache_read=<usd> cache_write=<usd>"
//
// US dollars per million tokens; fields may come in any order and be left
// out. A rule for a model of the built-in table starts from its built-in
// price (so "gpt-4.1 input=1.6" changes the input price only); a rule for
// another model starts from zero. The model name is matched as Table.Lookup
// says (lower-cased); it must not be empty nor contain a blank, and every
// price must be a finite number, not negative.
func ParseRule(rule string) (model string, p Price, err error) {
	return parseRule(rule, builtin)
}

func parseRule(rule string, base map[string]Price) (string, Price, error) {
	fields := strings.Fields(rule)
	if len(fields) == 0 || strings.Contains(fields[0], "=") {
		return "", Price{}, fmt.Errorf("pricing: %q: want \"<model> input=<usd> output=<usd> cache_read=<usd> cache_write=<usd>\"", rule)
	}
	name := strings.ToLower(fields[0])
	p := base[name]
	if len(fields) == 1 {
		return "", Price{}, fmt.Errorf("pricing: %q: no price given", rule)
	}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return "", Price{}, fmt.Errorf("pricing: %q: %q is not key=value", rule, f)
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
			return "", Price{}, fmt.Errorf("pricing: %q: %s must be a non-negative number of US dollars per million tokens, got %q", rule, k, v)
		}
		switch k {
		case "input":
			p.Input = n
		case "output":
			p.Output = n
		case "cache_read":
			p.CacheRead = n
		case "cache_write":
			p.CacheWrite = n
		default:
			return "", Price{}, fmt.Errorf("pricing: %q: unknown field %q (want input, output, cache_read, cache_write)", rule, k)
		}
	}
	return name, p, nil
}
