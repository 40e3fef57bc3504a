package eval

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// anthropicTurns are the bodies of two consecutive turns of an Anthropic
// conversation (the second one tool round longer), as the driver renders
// them, before the breakpoints.
func anthropicTurns() (string, string) {
	d, _ := kit.Lookup("anthropic")
	r := kit.Request{System: "sys", Tools: Tools, History: []string{
		d.User("fix it"),
		`{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"a"}}]}`,
		d.ToolResult("t1", "read_file", "content"),
	}}
	first := d.Request(r)
	r.History = append(r.History, `{"role":"assistant","content":[{"type":"text","text":"done"}]}`, d.User("thanks"))
	return first, d.Request(r)
}

func TestCacheBreakpoints(t *testing.T) {
	first, second := anthropicTurns()
	b1, b2 := cacheBreakpoints([]byte(first)), cacheBreakpoints([]byte(second))
	for _, b := range [][]byte{b1, b2} {
		require.True(t, gjson.ValidBytes(b), string(b))
		require.Equal(t, `{"type":"ephemeral"}`, gjson.GetBytes(b, "system.0.cache_control").Raw)
		require.Equal(t, "sys", gjson.GetBytes(b, "system.0.text").String())
		msgs := gjson.GetBytes(b, "messages").Array()
		marks := 0
		for i, m := range msgs {
			require.True(t, m.Get("content").IsArray(), "message %d has blocks", i)
			for _, blk := range m.Get("content").Array() {
				if blk.Get("cache_control").Exists() {
					marks++
				}
			}
		}
		require.Equal(t, 1, marks, "one breakpoint in the messages")
		last := msgs[len(msgs)-1].Get("content").Array()
		require.True(t, last[len(last)-1].Get("cache_control").Exists(), "on the last block of the last message")
	}
	// Without the moved marker, the first turn's messages are a prefix of
	// the second's, byte for byte.
	unmarked, err := sjson.DeleteBytes(b1, "messages.2.content.0.cache_control")
	require.NoError(t, err)
	n := len(gjson.GetBytes(unmarked, "messages").Array())
	for i := range n {
		require.Equal(t, gjson.GetBytes(unmarked, "messages."+strconv.Itoa(i)).Raw, gjson.GetBytes(b2, "messages."+strconv.Itoa(i)).Raw, "message %d", i)
	}
	require.Equal(t, string(b1), string(cacheBreakpoints(b1)), "marking twice changes nothing")
}

func FuzzCacheBreakpoints(f *testing.F) {
	first, second := anthropicTurns()
	f.Add(first)
	f.Add(second)
	f.Add(`{"messages":[]}`)
	f.Add(`{"system":[{"type":"text","text":"x"}],"messages":[{"role":"user","content":""}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		if !gjson.Valid(body) || !gjson.Parse(body).IsObject() {
			return
		}
		out := cacheBreakpoints([]byte(body))
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid JSON from %q: %q", body, out)
		}
		if again := cacheBreakpoints(out); string(again) != string(out) {
			t.Fatalf("not idempotent:\n%s\n%s", out, again)
		}
	})
}

func TestJoinUserItems(t *testing.T) {
	results := func(d kit.Driver) []string {
		return []string{d.ToolResult("a", "read_file", "one"), d.ToolResult("b", "list_files", "two")}
	}
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			items := results(d)
			got := joinUserItems(items)
			require.Equal(t, items[:1], joinUserItems(items[:1]), "one result stays as it is")
			before := d.ToolHistory([]byte(d.Request(kit.Request{History: items})))
			after := d.ToolHistory([]byte(d.Request(kit.Request{History: got})))
			require.Equal(t, before, after, "the same results, in order")
			require.Len(t, before, 2)
			for _, it := range got {
				require.True(t, gjson.Valid(it), it)
			}
		})
	}
	anthropic, _ := kit.Lookup("anthropic")
	require.Len(t, joinUserItems(results(anthropic)), 1, "Anthropic: one user message holds the results")
	gemini, _ := kit.Lookup("gemini")
	require.Len(t, joinUserItems(results(gemini)), 1, "Gemini: one user content holds the responses")
	chat, _ := kit.Lookup("openai_chat")
	require.Len(t, joinUserItems(results(chat)), 2, "Chat: a tool message each")
	mixed := []string{anthropic.ToolResult("a", "x", "1"), anthropic.User("plain text")}
	require.Equal(t, mixed, joinUserItems(mixed), "a string-content message is not joined")
}

func TestDetect(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name             string
		getenv           func(string) string
		api, model, base string
		want             Provider
		err              string
	}{
		{name: "no key: the mock", getenv: env(), want: Provider{}},
		{name: "no key for the API: the mock on it", getenv: env("ANTHROPIC_API_KEY", "k"), api: "gemini", want: Provider{API: "gemini"}},
		{name: "the first key found", getenv: env("GEMINI_API_KEY", "g", "ANTHROPIC_API_KEY", "k"),
			want: Provider{Live: true, API: "anthropic", Key: "k", BaseURL: "https://api.anthropic.com", Model: "claude-haiku-4-5"}},
		{name: "OpenAI defaults to chat", getenv: env("OPENAI_API_KEY", "o"),
			want: Provider{Live: true, API: "openai_chat", Key: "o", BaseURL: "https://api.openai.com", Model: "gpt-4.1-mini"}},
		{name: "responses by -api, base URL from the environment without /v1", getenv: env("OPENAI_API_KEY", "o", "OPENAI_BASE_URL", "http://gw:8080/v1/"),
			api: "openai_responses", want: Provider{Live: true, API: "openai_responses", Key: "o", BaseURL: "http://gw:8080", Model: "gpt-4.1-mini"}},
		{name: "flags win", getenv: env("GEMINI_API_KEY", "g", "GEMINI_BASE_URL", "http://env"), model: "gemini-x", base: "http://flag/v1beta",
			want: Provider{Live: true, API: "gemini", Key: "g", BaseURL: "http://flag", Model: "gemini-x"}},
		{name: "unknown API", getenv: env(), api: "bedrock", err: "unknown API"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect(tc.getenv, tc.api, tc.model, tc.base)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, !got.Live, got.Describe() == MockNote)
		})
	}
}

func TestCredentials(t *testing.T) {
	for _, d := range kit.Drivers() {
		h := credentials(d, "KEY")
		require.Len(t, h, len(d.Headers()), d.Name())
		found := false
		for k, v := range h {
			require.NotContains(t, v, "test", "%s: %s still holds the test credential", d.Name(), k)
			found = found || v == "KEY" || v == "Bearer KEY"
		}
		require.True(t, found, "%s: %v", d.Name(), h)
	}
}

// TestPrefixBreaks: a request that drops or changes an earlier message is
// a break; one that only moves the cache breakpoint is not.
func TestPrefixBreaks(t *testing.T) {
	first, second := anthropicTurns()
	b1, b2 := cacheBreakpoints([]byte(first)), cacheBreakpoints([]byte(second))
	d, _ := kit.Lookup("anthropic")
	ex := func(bodies ...[]byte) []Exchange {
		var us []Upstream
		for _, b := range bodies {
			us = append(us, Upstream{Request: b})
		}
		return []Exchange{{Upstream: us[:1]}, {Upstream: us[1:]}}
	}
	require.Zero(t, prefixBreaks(d, ex(b1, b2)), "the breakpoint moved on")
	changed, err := sjson.SetBytes(b2, "messages.0.content.0.text", "something else")
	require.NoError(t, err)
	require.Equal(t, 1, prefixBreaks(d, ex(b1, changed)))
	require.Equal(t, 1, prefixBreaks(d, ex(b2, b1)), "a shorter conversation")
	chat, _ := kit.Lookup("openai_chat")
	c1 := chat.Request(kit.Request{History: []string{chat.User("a")}})
	c2 := chat.Request(kit.Request{History: []string{chat.User("a"), `{"role":"assistant","content":"b"}`}})
	require.Zero(t, prefixBreaks(chat, ex([]byte(c1), []byte(c2))))
	require.Equal(t, 1, prefixBreaks(chat, ex([]byte(c2), []byte(c1))))
}
