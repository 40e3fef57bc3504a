package pricing

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

func TestLookup(t *testing.T) {
	tab := Builtin()
	cases := []struct{ model, want string }{
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-opus-4-1@20250805", "claude-opus-4-1"},
		{"claude-opus-4-20250514", "claude-opus-4"},
		{"claude-3-5-haiku-latest", "claude-3-5-haiku"},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku"},
		{"Claude-Haiku-4-5", "claude-haiku-4-5"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-5-mini", "gpt-5-mini"},
		{"gpt-5-codex", "gpt-5-codex"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"o4-mini-2025-04-16", "o4-mini"},
		{"models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite"},
		{"gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"},
		{"anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"},
		// A newer version is never priced as an older one.
		{"claude-opus-4-9", ""},
		{"gpt-5.9", ""},
		{"gemini-2.5", ""},
		{"", ""},
		{"llama-3", ""},
	}
	for _, c := range cases {
		_, got, ok := tab.Lookup(c.model)
		require.Equal(t, c.want, got, c.model)
		require.Equal(t, c.want != "", ok, c.model)
	}
}

func TestCost(t *testing.T) {
	tab := Builtin()
	u := conv.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000}
	usd, ok := tab.Cost("claude-sonnet-4-5-20250929", u)
	require.True(t, ok)
	// 3 + 0.1*15 + 2*0.30 + 0.4*3.75
	require.InDelta(t, 3+1.5+0.6+1.5, usd, 1e-9)

	usd, ok = tab.Cost("unknown-model", u)
	require.False(t, ok)
	require.Zero(t, usd)

	var nilTab *Table
	usd, ok = nilTab.Cost("gpt-4.1", u)
	require.False(t, ok)
	require.Zero(t, usd)
	usd, ok = (&Table{}).Cost("gpt-4.1", u)
	require.False(t, ok)
	require.Zero(t, usd)
}

// TestBuiltinSane: every built-in price is set and cache reads are cheaper
// than fresh input.
func TestBuiltinSane(t *testing.T) {
	for name, p := range builtin {
		require.Positive(t, p.Input, name)
		require.Positive(t, p.Output, name)
		require.Less(t, p.CacheRead, p.Input, name)
		require.GreaterOrEqual(t, p.CacheRead, 0.0, name)
	}
}

func TestRules(t *testing.T) {
	tab, err := New([]string{
		"gpt-4.1 input=1.6",
		"my-model input=1 output=2 cache_read=0.5 cache_write=1.5",
		"My-Model output=3",
	})
	require.NoError(t, err)
	p, _, ok := tab.Lookup("gpt-4.1-2025-04-14")
	require.True(t, ok)
	require.Equal(t, Price{Input: 1.6, Output: 8, CacheRead: 0.50}, p, "fields not given keep the built-in price")
	p, _, ok = tab.Lookup("my-model")
	require.True(t, ok)
	require.Equal(t, Price{Input: 1, Output: 3, CacheRead: 0.5, CacheWrite: 1.5}, p, "a later rule applies over an earlier one")
	_, _, ok = Builtin().Lookup("my-model")
	require.False(t, ok, "the built-in table is not changed")

	for _, bad := range []string{
		"", "   ", "input=1", "m", "m input", "m input=-1", "m input=x", "m input=NaN", "m input=+Inf", "m tokens=1",
	} {
		_, _, err := ParseRule(bad)
		require.Error(t, err, "%q", bad)
		_, err = New([]string{bad})
		require.Error(t, err, "%q", bad)
	}
	name, p, err := ParseRule("  New-Model   cache_write=0  ")
	require.NoError(t, err)
	require.Equal(t, "new-model", name)
	require.Equal(t, Price{}, p)
}

func BenchmarkLookup(b *testing.B) {
	tab := Builtin()
	for _, m := range []string{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "gemini-2.5-flash-preview-09-2025", "unknown-model-x"} {
		b.Run(m, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tab.Lookup(m)
			}
		})
	}
}
