package config

import (
	"fmt"
	"strconv"
	"strings"
)

func (r *Recovery) validate(p *problems) {
	if r.MaxAttempts < 0 || r.MaxAttempts > 8 {
		p.add("recovery.max_attempts", "%d is out of range: must be between 0 and 8", r.MaxAttempts)
	}
	if r.MinOutputTokens < 0 {
		p.add("recovery.min_output_tokens", "%d must not be negative", r.MinOutputTokens)
	}
	if _, err := r.StrategyRules(); err != nil {
		p.add("recovery.strategy", "%v", err)
	}
	if _, err := r.MaxOutputRules(); err != nil {
		p.add("recovery.max_output_tokens", "%v", err)
	}
}

// ModelRule is one "model-glob=value" rule of recovery.strategy or
// recovery.max_output_tokens.
type ModelRule[T any] struct {
	Pattern string
	Value   T
}

// StrategyRules parses recovery.strategy: Value is true for prefill.
func (r *Recovery) StrategyRules() ([]ModelRule[bool], error) {
	return parseRules(r.Strategy, func(v string) (bool, error) {
		switch v {
		case "prefill":
			return true, nil
		case "instruction":
			return false, nil
		}
		return false, fmt.Errorf("strategy %q is not prefill or instruction", v)
	})
}

// MaxOutputRules parses recovery.max_output_tokens.
func (r *Recovery) MaxOutputRules() ([]ModelRule[int64], error) {
	return parseRules(r.MaxOutputTokens, func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a positive token count", v)
		}
		return n, nil
	})
}

func parseRules[T any](entries []string, value func(string) (T, error)) ([]ModelRule[T], error) {
	out := make([]ModelRule[T], 0, len(entries))
	var bad []string
	for _, e := range entries {
		pat, v, ok := strings.Cut(e, "=")
		pat, v = strings.TrimSpace(pat), strings.TrimSpace(v)
		if !ok || pat == "" {
			bad = append(bad, fmt.Sprintf("%q is not model-glob=value", e))
			continue
		}
		val, err := value(v)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", e, err))
			continue
		}
		out = append(out, ModelRule[T]{Pattern: pat, Value: val})
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return out, nil
}
