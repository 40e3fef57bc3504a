package recovery

import (
	"fmt"
	"strconv"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/ruleline"
)

// Name is the feature's name: its configuration section, its session slot
// and its hook's name in logs and metrics.
const Name = "recovery"

// Config is the recovery section of the configuration (keys recovery.*):
// truncation recovery and the output-limit floor.
type Config struct {
	// Enabled: key recovery.enabled; default true. Off, replies cut by the
	// output limit reach the agent as they are and limits are not raised.
	Enabled bool `mapstructure:"enabled"`
	// MaxAttempts: key recovery.max_attempts; continuations per turn;
	// default 2, at most 8.
	MaxAttempts int `mapstructure:"max_attempts"`
	// MinOutputTokens: key recovery.min_output_tokens; a request's output
	// limit below this is raised to it (never above the model's maximum);
	// 0 disables the floor. Default 1200.
	MinOutputTokens int64 `mapstructure:"min_output_tokens"`
	// Strategy: key recovery.strategy; "model-glob=prefill|instruction"
	// rules, first match wins, * matches anything; a model no rule matches
	// uses instruction. prefill is used only where the request has no
	// extended thinking. Default: claude-3*=prefill, *=instruction.
	Strategy []string `mapstructure:"strategy"`
	// MaxOutputTokens: key recovery.max_output_tokens; "model-glob=N" rules
	// giving each model's largest output limit, the cap of the floor and of
	// the doubled limit after a cut tool call. Default: a table of current
	// Anthropic, OpenAI and Gemini models.
	MaxOutputTokens []string `mapstructure:"max_output_tokens"`
	// Instruction: key recovery.instruction; the continue instruction of
	// the instruction strategy; "" uses the built-in text.
	Instruction string `mapstructure:"instruction"`
}

var _ hooks.Section = (*Config)(nil)

// SetDefaults implements hooks.Section.
func (c *Config) SetDefaults() {
	*c = Config{
		Enabled:         true,
		MaxAttempts:     2,
		MinOutputTokens: 1200,
		Strategy:        []string{"claude-3*=prefill", "*=instruction"},
		MaxOutputTokens: DefaultMaxOutputTokens(),
		Instruction:     "",
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

// Validate implements hooks.Section.
func (c *Config) Validate() []hooks.Problem {
	var p hooks.Problems
	if c.MaxAttempts < 0 || c.MaxAttempts > 8 {
		p.Add("recovery.max_attempts", "%d is out of range: must be between 0 and 8", c.MaxAttempts)
	}
	if c.MinOutputTokens < 0 {
		p.Add("recovery.min_output_tokens", "%d must not be negative", c.MinOutputTokens)
	}
	if _, err := c.StrategyRules(); err != nil {
		p.Add("recovery.strategy", "%v", err)
	}
	if _, err := c.MaxOutputRules(); err != nil {
		p.Add("recovery.max_output_tokens", "%v", err)
	}
	return p
}

// OwnedTools implements hooks.Section: recovery owns no tool.
func (c *Config) OwnedTools() []string { return nil }

// Provision implements hooks.Section: one hook, in the chains of the APIs
// that can continue a reply.
func (c *Config) Provision(hooks.Env) (hooks.Plugin, error) {
	if !c.Enabled {
		return nil, nil
	}
	prefill, err := c.StrategyRules()
	if err != nil {
		return nil, fmt.Errorf("recovery.strategy: %w", err)
	}
	maxes, err := c.MaxOutputRules()
	if err != nil {
		return nil, fmt.Errorf("recovery.max_output_tokens: %w", err)
	}
	return plugin{New(Options{
		MaxAttempts: c.MaxAttempts, MinOutputTokens: c.MinOutputTokens, Instruction: c.Instruction,
		Prefill: prefill, MaxOutputTokens: maxes,
	})}, nil
}

// plugin gives the hook to the chains of APIs that can continue a reply.
type plugin struct{ h *Hook }

func (p plugin) Hook(api hooks.API) (hooks.Hook, error) {
	if !api.Continues {
		return nil, nil
	}
	return p.h, nil
}

func (p plugin) Close() error { return nil }

// StrategyRules parses recovery.strategy: Value is true for prefill.
func (c *Config) StrategyRules() ([]ModelRule[bool], error) {
	return parseRules(c.Strategy, func(v string) (bool, error) {
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
func (c *Config) MaxOutputRules() ([]ModelRule[int64], error) {
	return parseRules(c.MaxOutputTokens, func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a positive token count", v)
		}
		return n, nil
	})
}

func parseRules[T any](entries []string, value func(string) (T, error)) ([]ModelRule[T], error) {
	return ruleline.Pairs(entries, "model-glob=value", func(pat, v string) (ModelRule[T], error) {
		val, err := value(v)
		return ModelRule[T]{Pattern: pat, Value: val}, err
	})
}
