// Package recovery is truncation recovery (docs/features.md): it raises a
// request's output limit to a floor and asks the turn engine to continue a
// reply cut by the output limit. Its per-session counters live in the
// session's "recovery" slot.
package recovery

import (
	"context"
	"strings"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// DefaultRecoveryInstruction is the user message of the instruction
// strategy (the documented recovery prompt, adapted for a continuation that is
// appended to the same reply).
const DefaultRecoveryInstruction = "Your previous reply was cut off because it reached the output token limit. " +
	"Continue exactly where it stopped, starting with the next character: do not repeat anything already written, " +
	"do not apologise or add a preamble, and keep the same format. If you were in the middle of a tool call, " +
	"make that tool call again in full."

// ModelRule maps model names matching Pattern to a value. Pattern is a glob
// where * matches any run of characters (slashes included) and everything
// else matches itself; the first matching rule of a list wins.
type ModelRule[T any] struct {
	Pattern string
	Value   T
}

// MatchModel returns the value of the first rule whose pattern matches
// model, and whether one did.
func MatchModel[T any](rules []ModelRule[T], model string) (T, bool) {
	for _, r := range rules {
		if globMatch(r.Pattern, model) {
			return r.Value, true
		}
	}
	var zero T
	return zero, false
}

// globMatch matches s against a pattern whose only metacharacter is *. It
// runs for every request's model against every rule, so it walks the
// pattern in place rather than splitting it.
func globMatch(pattern, s string) bool {
	first, rest, ok := strings.Cut(pattern, "*")
	if !ok {
		return pattern == s
	}
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for {
		part, more, ok := strings.Cut(rest, "*")
		if !ok { // the last part: a suffix of what is left
			return strings.HasSuffix(s, part)
		}
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s, rest = s[i+len(part):], more
	}
}

// Options configure the hook (Config.Provision builds them from the
// configuration section).
type Options struct {
	// MaxAttempts bounds the continuations of one turn.
	MaxAttempts int
	// MinOutputTokens is the output-limit floor; 0 disables it.
	MinOutputTokens int64
	// Prefill lists the models continued by assistant prefill (true) or by
	// the instruction (false); the default is the instruction.
	Prefill []ModelRule[bool]
	// MaxOutputTokens lists each model's largest output limit: the floor
	// and the raised limit after a cut tool call never go above it.
	MaxOutputTokens []ModelRule[int64]
	// Instruction is the continue instruction; "" uses the default.
	Instruction string
}

// Hook continues replies cut by the output limit (docs/features.md): it raises a request's output
// limit to a floor (P0.2) and asks the turn engine to continue a reply cut
// by the output limit (P0.3): text is continued where it stopped, a reply
// cut inside a tool call is continued with a doubled limit and the cut call
// discarded. A reply that filled the context window is not continued. It
// keeps no state and is safe for concurrent use.
type Hook struct{ cfg Options }

var (
	_ hooks.RequestHook = (*Hook)(nil)
	_ hooks.ReplyHook   = (*Hook)(nil)
	_ hooks.Continuer   = (*Hook)(nil)
)

// New builds the hook.
func New(cfg Options) *Hook {
	if cfg.Instruction == "" {
		cfg.Instruction = DefaultRecoveryInstruction
	}
	return &Hook{cfg: cfg}
}

// Name implements Hook.
func (r *Hook) Name() string { return Name }

// MayContinue implements hooks.Continuer.
func (r *Hook) MayContinue() bool { return true }

// modelMax is the model's configured output maximum (0: unknown).
func (r *Hook) modelMax(model string) int64 {
	v, _ := MatchModel(r.cfg.MaxOutputTokens, model)
	return v
}

// OnRequest raises an output limit below the floor to the floor, never
// above the model's maximum. A request without a limit is left alone: the
// provider's default then applies, which for current models is at least
// the floor, and adding a limit could only lower it.
func (r *Hook) OnRequest(_ context.Context, _ *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	floor := r.cfg.MinOutputTokens
	if max := r.modelMax(req.Model); max > 0 && floor > max {
		floor = max
	}
	if !req.HasMaxOutputTokens || floor <= 0 || req.MaxOutputTokens >= floor || req.MaxOutputTokens <= 0 {
		// A limit of 0 is deliberate (Anthropic cache pre-warming).
		return conv.RequestEdits{}, nil, nil
	}
	return conv.RequestEdits{SetMaxOutputTokens: floor}, nil, nil
}

// OnReply asks for a continuation when the reply stopped on the output
// limit and attempts remain.
func (r *Hook) OnReply(_ context.Context, call *hooks.Call, reply *conv.Reply) (hooks.ReplyDecision, error) {
	if reply.Stop != conv.StopMaxTokens || call.Recoveries >= r.cfg.MaxAttempts {
		return hooks.ReplyDecision{}, nil
	}
	model := ""
	thinking := false
	if call.Request != nil {
		model, thinking = call.Request.Model, call.Request.Thinking
	}
	c := &conv.Continuation{Instruction: r.cfg.Instruction}
	if prefill, _ := MatchModel(r.cfg.Prefill, model); prefill && !thinking {
		c.Prefill, c.Instruction = true, ""
	}
	if len(reply.ToolCalls) > 0 {
		c.DropCalls = true
		if limit := call.OutputLimit; limit > 0 {
			raised := 2 * limit
			if max := r.modelMax(model); max > 0 && raised > max {
				raised = max
			}
			if raised > limit {
				c.MaxOutputTokens = raised
			}
		}
	}
	return hooks.ReplyDecision{Continue: c}, nil
}
