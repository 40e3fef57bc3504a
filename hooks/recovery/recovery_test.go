package recovery

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/stretchr/testify/require"
)

func newTestRecovery() *Hook {
	return New(Options{
		MaxAttempts:     2,
		MinOutputTokens: 1200,
		Prefill:         []ModelRule[bool]{{"claude-3*", true}, {"*", false}},
		MaxOutputTokens: []ModelRule[int64]{{"claude-3-5*", 8192}, {"tiny-*", 1000}, {"*", 16384}},
	})
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"*", "anything/at all", true},
		{"claude-3*", "claude-3-5-sonnet", true}, {"claude-3*", "claude-opus-4", false},
		{"gpt-*-mini", "gpt-4o-mini", true}, {"gpt-*-mini", "gpt-4o", false},
		{"*sonnet*", "anthropic/claude-sonnet-4", true},
		{"exact", "exact", true}, {"exact", "exactly", false},
		{"a*b*c", "abc", true}, {"a*b*c", "acb", false},
	} {
		require.Equal(t, c.want, globMatch(c.pattern, c.s), "%q ~ %q", c.pattern, c.s)
	}
}

func TestRecoveryFloor(t *testing.T) {
	r := newTestRecovery()
	for _, c := range []struct {
		name  string
		req   conv.Request
		limit int64
	}{
		{"below the floor is raised", conv.Request{Model: "gpt-4o", MaxOutputTokens: 600, HasMaxOutputTokens: true}, 1200},
		{"at the floor is left", conv.Request{Model: "gpt-4o", MaxOutputTokens: 1200, HasMaxOutputTokens: true}, 0},
		{"missing is left to the provider's default", conv.Request{Model: "gpt-4o"}, 0},
		{"zero (cache pre-warm) is left", conv.Request{Model: "claude-x", MaxOutputTokens: 0, HasMaxOutputTokens: true}, 0},
		{"never above the model's maximum", conv.Request{Model: "tiny-1", MaxOutputTokens: 300, HasMaxOutputTokens: true}, 1000},
	} {
		e, resp, err := r.OnRequest(context.Background(), &hooks.Call{}, &c.req)
		require.NoError(t, err)
		require.Nil(t, resp)
		require.Equal(t, c.limit, e.SetMaxOutputTokens, c.name)
	}
}

func TestRecoveryDecisions(t *testing.T) {
	r := newTestRecovery()
	decide := func(model string, thinking bool, limit int64, recoveries int, reply conv.Reply) *conv.Continuation {
		call := &hooks.Call{Request: &conv.Request{Model: model, Thinking: thinking}, OutputLimit: limit, Recoveries: recoveries}
		d, err := r.OnReply(context.Background(), call, &reply)
		require.NoError(t, err)
		return d.Continue
	}
	cut := conv.Reply{Text: "partial", Stop: conv.StopMaxTokens}

	require.Nil(t, decide("gpt-4o", false, 1200, 0, conv.Reply{Text: "done", Stop: conv.StopEnd}), "a complete reply is not continued")
	require.Nil(t, decide("gpt-4o", false, 1200, 0, conv.Reply{Text: "x", Stop: conv.StopContextWindow}), "a full context window is reported, not continued")
	require.Nil(t, decide("gpt-4o", false, 1200, 2, cut), "attempts are bounded")

	c := decide("gpt-4o", false, 1200, 0, cut)
	require.Equal(t, &conv.Continuation{Instruction: DefaultRecoveryInstruction}, c, "text is continued by instruction, limit unchanged")

	c = decide("claude-3-5-sonnet", false, 1200, 1, cut)
	require.Equal(t, &conv.Continuation{Prefill: true}, c, "prefill where the model accepts it")
	c = decide("claude-3-5-sonnet", true, 1200, 0, cut)
	require.False(t, c.Prefill, "never prefill with extended thinking")

	withCall := conv.Reply{Text: "let me write", Stop: conv.StopMaxTokens, ToolCalls: []conv.ToolCall{{Name: "Write", Args: []byte(`{"file_path":"a`)}}}
	c = decide("gpt-4o", false, 4000, 0, withCall)
	require.True(t, c.DropCalls)
	require.Equal(t, int64(8000), c.MaxOutputTokens, "a cut call doubles the limit")
	c = decide("claude-3-5-haiku", false, 6000, 0, withCall)
	require.Equal(t, int64(8192), c.MaxOutputTokens, "capped by the model's maximum")
	c = decide("claude-3-5-haiku", false, 8192, 0, withCall)
	require.Zero(t, c.MaxOutputTokens, "already at the maximum: continue without raising")
	require.True(t, c.DropCalls)
}

func TestChainShortCircuitsOnContinue(t *testing.T) {
	seen := false
	other := replyFunc(func(*conv.Reply) hooks.ReplyDecision { seen = true; return hooks.ReplyDecision{} })
	c := hooks.NewChain(other, newTestRecovery()) // reply hooks run in reverse: recovery first
	d, err := c.RunReply(context.Background(), &hooks.Call{Request: &conv.Request{}}, &conv.Reply{Stop: conv.StopMaxTokens})
	require.NoError(t, err)
	require.NotNil(t, d.Continue)
	require.False(t, seen, "no later hook sees a reply that is being continued")
	_, err = c.RunReply(context.Background(), &hooks.Call{Request: &conv.Request{}}, &conv.Reply{Stop: conv.StopEnd})
	require.NoError(t, err)
	require.True(t, seen)
}

type replyFunc func(*conv.Reply) hooks.ReplyDecision

func (replyFunc) Name() string { return "func" }
func (f replyFunc) OnReply(_ context.Context, _ *hooks.Call, r *conv.Reply) (hooks.ReplyDecision, error) {
	return f(r), nil
}

// globMatch agrees with the regular expression its pattern stands for:
// each * any run of bytes, everything else literal.
func FuzzGlobMatch(f *testing.F) {
	for _, seed := range [][2]string{{"*", ""}, {"a*b*c", "abc"}, {"a*b*c", "acb"}, {"gpt-*-mini", "gpt-4o-mini"},
		{"*ab*ab", "abab"}, {"a**a", "a"}, {"x*", "x\ny"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			t.Skip("the regexp reads UTF-8") // model names are
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re := regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if got, want := globMatch(pattern, s), re.MatchString(s); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, the pattern's regexp says %v", pattern, s, got, want)
		}
	})
}
