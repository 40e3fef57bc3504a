package mock

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// big returns a JSON string literal of about n bytes.
func big(tag string, n int) string {
	return fmt.Sprintf("%q", tag+strings.Repeat("x", n))
}

func anthropicBody(msgs ...string) []byte {
	system := `[{"type":"text","text":` + big("sys", 8000) + `,"cache_control":{"type":"ephemeral"}}]`
	return []byte(`{"model":"m","max_tokens":100,"system":` + system + `,"messages":[` + strings.Join(msgs, ",") + `]}`)
}

func userMsg(text string, bp bool) string {
	cc := ""
	if bp {
		cc = `,"cache_control":{"type":"ephemeral"}`
	}
	return `{"role":"user","content":[{"type":"text","text":` + text + cc + `}]}`
}

func asstMsg(text string) string {
	return `{"role":"assistant","content":[{"type":"text","text":` + text + `}]}`
}

func TestPromptCacheAnthropicBreakpoints(t *testing.T) {
	c := newPromptCache(time.Minute)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }

	first := anthropicBody(userMsg(big("u1", 4000), true))
	var u Usage
	c.usage(apiAnthropic, first, "m", &u)
	require.Zero(t, u.CacheRead, "nothing cached yet")
	require.Greater(t, u.CacheWrite, 2900, "system and first message are written")
	require.Positive(t, u.Input)
	require.InDelta(t, len(first)/4, u.Input+u.CacheRead+u.CacheWrite, 1)

	// The next turn resends the same prefix and moves the breakpoint to its
	// newest message: the old prefix is read, the new part written.
	second := anthropicBody(userMsg(big("u1", 4000), false), asstMsg(big("a1", 2000)), userMsg(big("u2", 2000), true))
	var u2 Usage
	c.usage(apiAnthropic, second, "m", &u2)
	require.Equal(t, u.CacheWrite, u2.CacheRead, "the prefix written by the first request is read")
	require.InDelta(t, 1000, u2.CacheWrite, 40, "the two new messages are written")

	// A changed early message breaks the prefix after the system prompt.
	changed := anthropicBody(userMsg(big("U1", 4000), false), asstMsg(big("a1", 2000)), userMsg(big("u2", 2000), true))
	var u3 Usage
	c.usage(apiAnthropic, changed, "m", &u3)
	require.InDelta(t, 2000, u3.CacheRead, 40, "only the system prompt (a breakpoint) is read")

	// Another model shares nothing; an expired prefix is gone.
	var u4 Usage
	c.usage(apiAnthropic, second, "other", &u4)
	require.Zero(t, u4.CacheRead)
	now = now.Add(2 * time.Minute)
	var u5 Usage
	c.usage(apiAnthropic, second, "m", &u5)
	require.Zero(t, u5.CacheRead, "entries expire after the TTL")
}

func TestPromptCacheAnthropicNoBreakpoint(t *testing.T) {
	c := newPromptCache(0)
	body := []byte(`{"model":"m","messages":[` + userMsg(big("u", 20000), false) + `]}`)
	for range 2 {
		var u Usage
		c.usage(apiAnthropic, body, "m", &u)
		require.Zero(t, u.CacheRead)
		require.Zero(t, u.CacheWrite)
	}
}

func TestPromptCacheAutomatic(t *testing.T) {
	c := newPromptCache(0)
	msg := func(role, text string) string { return `{"role":"` + role + `","content":` + text + `}` }
	first := []byte(`{"model":"g","messages":[` + msg("system", big("s", 6000)) + `,` + msg("user", big("u", 100)) + `]}`)
	var u Usage
	c.usage(apiChat, first, "g", &u)
	require.Zero(t, u.CacheRead)
	require.Zero(t, u.CacheWrite, "automatic caching reports no write")

	second := []byte(`{"model":"g","messages":[` + msg("system", big("s", 6000)) + `,` + msg("user", big("u", 100)) +
		`,` + msg("assistant", big("a", 300)) + `,` + msg("user", big("v", 100)) + `]}`)
	var u2 Usage
	c.usage(apiChat, second, "g", &u2)
	require.Positive(t, u2.CacheRead)
	require.Zero(t, u2.CacheRead%cacheAutoStep, "reads come in steps of 128 tokens")
	require.LessOrEqual(t, u2.CacheRead*4, len(first))
	require.InDelta(t, len(second)/4, u2.Input+u2.CacheRead, 1)

	small := []byte(`{"model":"g","messages":[` + msg("user", big("tiny", 100)) + `]}`)
	for range 2 {
		var us Usage
		c.usage(apiChat, small, "g", &us)
		require.Zero(t, us.CacheRead, "a prompt under 1,024 tokens is never cached")
	}
}
