package openaichat

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

func TestChatReplyAsMessages(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	tests := []struct {
		name, reply string
		want        []string
	}{
		{"text and calls",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\"","refusal":null,"annotations":[],
			  "tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			[]string{`{"role":"assistant","content":"Hi \"there\"","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`}},
		{"null content, reasoning kept",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"c"}]}}]}`,
			[]string{`{"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"c"}]}`}},
		{"absent content, empty calls and reasoning dropped",
			`{"choices":[{"message":{"role":"assistant","reasoning_content":"","tool_calls":[ ]}}]}`,
			[]string{`{"role":"assistant","content":null}`}},
		{"refusal kept",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't.","audio":null}}]}`,
			[]string{`{"role":"assistant","content":null,"refusal":"I can't."}`}},
		{"choice 0 of several, parts content, function_call",
			`{"choices":[{"index":1,"message":{"content":"no"}},{"index":0,"message":{"content":[{"type":"text","text":"p"}],"function_call":{"name":"f","arguments":"{}"}}}]}`,
			[]string{`{"role":"assistant","content":[{"type":"text","text":"p"}],"function_call":{"name":"f","arguments":"{}"}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := apitest.CheckItemsOut(t, []byte(tt.reply), c.ReplyAsMessages)
			require.NoError(t, err)
			require.Equal(t, tt.want, apitest.Strings(items))
		})
	}
	for _, bad := range []string{`{`, `[]`, `{"choices":[]}`, `{"choices":[{"message":"x"}]}`,
		`{"choices":[{"message":{"tool_calls":{}}}]}`} {
		_, err := c.ReplyAsMessages([]byte(bad))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}
}

func TestChatToolResultMessages(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	items, err := c.ToolResultMessages([]conv.ToolResult{
		{CallID: "call_1", Name: "create_new_topic", Content: "Topic \"auth\" started.\n"},
		{CallID: "call_\"2", Name: "bash", Content: "Blocked by policy: rm -rf <dir> \u2028", IsError: true},
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"role":"tool","tool_call_id":"call_1","content":"Topic \"auth\" started.\n"}`,
		`{"role":"tool","tool_call_id":"call_\"2","content":"Blocked by policy: rm -rf <dir> \u2028"}`,
	}, apitest.Strings(items))
	items, err = c.ToolResultMessages(nil)
	require.NoError(t, err)
	require.Empty(t, items)
	_, err = c.ToolResultMessages([]conv.ToolResult{{Content: "x"}})
	require.Error(t, err)
}

// chatConv is a small conversation: system, user, assistant with two calls,
// their two tool results, a user turn.
const chatConv = `{"model":"m","messages":[` +
	`{"role":"system","content":"S"},` +
	`{"role":"user","content":"q"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
	`{"role":"tool","tool_call_id":"a","content":"ra"},` +
	`{"role":"tool","tool_call_id":"b","content":"rb"},` +
	`{"role":"user","content":[{"type":"text","text":"u"}]}` +
	`],"stream":true}`

func TestChatPositionalEdits(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	res := []conv.ToolResult{{CallID: "x", Content: "r\"x"}, {CallID: "y", Content: "refused", IsError: true}}
	tests := []struct {
		name string
		body string
		edit func([]byte) ([]byte, error)
		want string
	}{
		{"append", `{"messages": [ {"role":"user","content":"q"} ] }`,
			func(b []byte) ([]byte, error) {
				return c.AppendMessages(b, [][]byte{[]byte(`{"role":"assistant","content":"a"}`), []byte(`{"role":"tool","tool_call_id":"t","content":"r"}`)})
			},
			`{"messages": [ {"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"tool","tool_call_id":"t","content":"r"} ] }`},
		{"append to empty", `{"messages":[ ]}`,
			func(b []byte) ([]byte, error) {
				return c.AppendMessages(b, [][]byte{[]byte(`{"role":"user","content":"q"}`)})
			},
			`{"messages":[{"role":"user","content":"q"} ]}`},
		{"append creates messages", `{"model":"m"}`,
			func(b []byte) ([]byte, error) {
				return c.AppendMessages(b, [][]byte{[]byte(`{"role":"user","content":"q"}`)})
			},
			`{"model":"m","messages":[{"role":"user","content":"q"}]}`},
		{"append nothing", `{"messages":[]}`,
			func(b []byte) ([]byte, error) { return c.AppendMessages(b, nil) },
			`{"messages":[]}`},
		{"replace with two", `{"messages":[{"role":"user","content":"q"}, {"role":"assistant","content":"a"}, {"role":"user","content":"z"}]}`,
			func(b []byte) ([]byte, error) {
				return c.ReplaceMessages(b, 1, [][]byte{[]byte(`{"role":"assistant","content":"1"}`), []byte(`{"role":"tool","tool_call_id":"t","content":"2"}`)})
			},
			`{"messages":[{"role":"user","content":"q"}, {"role":"assistant","content":"1"},{"role":"tool","tool_call_id":"t","content":"2"}, {"role":"user","content":"z"}]}`},
		{"remove middle", `{"messages":[{"role":"user","content":"q"}, {"role":"assistant","content":"a"}, {"role":"user","content":"z"}]}`,
			func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 1, nil) },
			`{"messages":[{"role":"user","content":"q"}, {"role":"user","content":"z"}]}`},
		{"remove first", `{"messages":[{"role":"user","content":"q"}, {"role":"assistant","content":"a"}]}`,
			func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 0, nil) },
			`{"messages":[{"role":"assistant","content":"a"}]}`},
		{"remove only", `{"messages":[{"role":"user","content":"q"}]}`,
			func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 0, nil) },
			`{"messages":[]}`},
		{"prepend results", chatConv,
			func(b []byte) ([]byte, error) { return c.PrependToolResults(b, 2, res) },
			`{"model":"m","messages":[` +
				`{"role":"system","content":"S"},` +
				`{"role":"user","content":"q"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"x","content":"r\"x"},{"role":"tool","tool_call_id":"y","content":"refused"},` +
				`{"role":"tool","tool_call_id":"a","content":"ra"},` +
				`{"role":"tool","tool_call_id":"b","content":"rb"},` +
				`{"role":"user","content":[{"type":"text","text":"u"}]}` +
				`],"stream":true}`},
		{"prepend results to last", `{"messages":[{"role":"assistant","content":"a"}]}`,
			func(b []byte) ([]byte, error) { return c.PrependToolResults(b, 0, res[:1]) },
			`{"messages":[{"role":"assistant","content":"a"},{"role":"tool","tool_call_id":"x","content":"r\"x"}]}`},
		{"user text on string content", chatConv,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 1, []string{"T1", "T\"2"}) },
			`{"model":"m","messages":[` +
				`{"role":"system","content":"S"},` +
				`{"role":"user","content":[{"type":"text","text":"q"},{"type":"text","text":"T1"},{"type":"text","text":"T\"2"}]},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"a","content":"ra"},` +
				`{"role":"tool","tool_call_id":"b","content":"rb"},` +
				`{"role":"user","content":[{"type":"text","text":"u"}]}` +
				`],"stream":true}`},
		{"user text on parts", chatConv,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 5, []string{"T"}) },
			`{"model":"m","messages":[` +
				`{"role":"system","content":"S"},` +
				`{"role":"user","content":"q"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"a","content":"ra"},` +
				`{"role":"tool","tool_call_id":"b","content":"rb"},` +
				`{"role":"user","content":[{"type":"text","text":"u"},{"type":"text","text":"T"}]}` +
				`],"stream":true}`},
		{"user text after the tool run", chatConv,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 3, []string{"T"}) },
			`{"model":"m","messages":[` +
				`{"role":"system","content":"S"},` +
				`{"role":"user","content":"q"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"a","content":"ra"},` +
				`{"role":"tool","tool_call_id":"b","content":"rb"},{"role":"user","content":"T"},` +
				`{"role":"user","content":[{"type":"text","text":"u"}]}` +
				`],"stream":true}`},
		{"user text after the last tool", `{"messages":[{"role":"tool","tool_call_id":"a","content":"r"}, {"role":"tool","tool_call_id":"b","content":"r"}]}`,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 1, []string{"T1", "T2"}) },
			`{"messages":[{"role":"tool","tool_call_id":"a","content":"r"}, {"role":"tool","tool_call_id":"b","content":"r"},{"role":"user","content":[{"type":"text","text":"T1"},{"type":"text","text":"T2"}]}]}`},
		{"user text on null content", `{"messages":[{"role":"user","content":null}]}`,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 0, []string{"T"}) },
			`{"messages":[{"role":"user","content":[{"type":"text","text":"T"}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := apitest.CheckTurn(t, []byte(tt.body), tt.edit)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			_, err = c.(rewrite.Codec).ParseRequest(out)
			require.NoError(t, err)
		})
	}
}

func TestChatPositionalErrors(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	body := []byte(chatConv)
	item := [][]byte{[]byte(`{"role":"user","content":"x"}`)}
	for name, f := range map[string]func() ([]byte, error){
		"replace -1":          func() ([]byte, error) { return c.ReplaceMessages(body, -1, item) },
		"replace n":           func() ([]byte, error) { return c.ReplaceMessages(body, 6, item) },
		"prepend n":           func() ([]byte, error) { return c.PrependToolResults(body, 6, []conv.ToolResult{{CallID: "x"}}) },
		"prepend on user":     func() ([]byte, error) { return c.PrependToolResults(body, 1, []conv.ToolResult{{CallID: "x"}}) },
		"prepend without id":  func() ([]byte, error) { return c.PrependToolResults(body, 2, []conv.ToolResult{{Content: "x"}}) },
		"user text n":         func() ([]byte, error) { return c.AppendUserTextAt(body, 6, []string{"t"}) },
		"user text system":    func() ([]byte, error) { return c.AppendUserTextAt(body, 0, []string{"t"}) },
		"user text assistant": func() ([]byte, error) { return c.AppendUserTextAt(body, 2, []string{"t"}) },
		"item not an object":  func() ([]byte, error) { return c.AppendMessages(body, [][]byte{[]byte(`[1]`)}) },
		"item invalid":        func() ([]byte, error) { return c.ReplaceMessages(body, 0, [][]byte{[]byte(`{`)}) },
		"messages not array":  func() ([]byte, error) { return c.AppendMessages([]byte(`{"messages":{}}`), item) },
		"body invalid":        func() ([]byte, error) { return c.ReplaceMessages([]byte(`{"messages":[{}]`), 0, item) },
		"no messages":         func() ([]byte, error) { return c.ReplaceMessages([]byte(`{}`), 0, item) },
	} {
		out, err := f()
		require.Error(t, err, name)
		require.Nil(t, out, name)
	}
	require.Equal(t, chatConv, string(body))
}

// chatReplyCalls is a pretty-printed reply with text and three calls.
const chatReplyCalls = `{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"On it.",
  "tool_calls":[
    {"id":"a","type":"function","function":{"name":"create_new_topic","arguments":"{}"}},
    {"id":"b","type":"function","function":{"name":"read_file","arguments":"{}"}},
    {"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}
  ]},"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

func TestChatEditReply(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	tests := []struct {
		name          string
		reply         string
		remove, first []int
		want          string
		ids           []string
	}{
		{"remove one", chatReplyCalls, []int{0}, nil,
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"On it.",
  "tool_calls":[
    {"id":"b","type":"function","function":{"name":"read_file","arguments":"{}"}},
    {"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}
  ]},"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, []string{"b", "c"}},
		{"remove and move", chatReplyCalls, []int{1}, []int{2},
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"On it.",
  "tool_calls":[
    {"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}},
    {"id":"a","type":"function","function":{"name":"create_new_topic","arguments":"{}"}}
  ]},"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, []string{"c", "a"}},
		{"move two", chatReplyCalls, nil, []int{2, 1},
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"On it.",
  "tool_calls":[
    {"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}},
    {"id":"b","type":"function","function":{"name":"read_file","arguments":"{}"}},
    {"id":"a","type":"function","function":{"name":"create_new_topic","arguments":"{}"}}
  ]},"finish_reason":"tool_calls"}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, []string{"c", "b", "a"}},
		{"remove all", chatReplyCalls, []int{2, 0, 1}, nil,
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"On it."},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, nil},
		{"remove all, finish first and calls first",
			`{"choices":[{"finish_reason":"tool_calls","message":{"tool_calls":[{"id":"a"}],"content":null}}]}`, []int{0}, nil,
			`{"choices":[{"finish_reason":"stop","message":{"content":null}}]}`, nil},
		{"remove all, no finish_reason",
			`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"a"}]}}]}`, []int{0}, nil,
			`{"choices":[{"message":{"content":null},"finish_reason":"stop"}]}`, nil},
		{"nothing", chatReplyCalls, nil, nil, chatReplyCalls, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := apitest.CheckTurn(t, []byte(tt.reply), func(b []byte) ([]byte, error) { return c.EditReply(b, tt.remove, tt.first) })
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			r, err := c.(rewrite.Codec).ParseReply(out)
			require.NoError(t, err)
			var ids []string
			for i, tc := range r.ToolCalls {
				require.Equal(t, i, tc.Index)
				ids = append(ids, tc.ID)
			}
			require.Equal(t, tt.ids, ids)
			if tt.ids == nil {
				require.Equal(t, conv.StopEnd, r.Stop)
			}
		})
	}
	for _, bad := range []struct{ remove, first []int }{{[]int{3}, nil}, {nil, []int{-1}}, {[]int{0}, []int{0}}} {
		_, err := c.EditReply([]byte(chatReplyCalls), bad.remove, bad.first)
		require.Error(t, err)
	}
	_, err := c.EditReply([]byte(`{"choices":[{"message":{"content":"x"}}]}`), []int{0}, nil)
	require.Error(t, err)
	_, err = c.EditReply([]byte(`nope`), []int{0}, nil)
	require.ErrorIs(t, err, rewrite.ErrMalformedReply)
}

func TestChatMergeReplies(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	tests := []struct {
		name, first, next, want string
	}{
		{"text continued",
			`{"id":"r1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, \"wor","refusal":null},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,"completion_tokens_details":{"reasoning_tokens":1}}}`,
			`{"id":"r2","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ld\"!\n","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			`{"id":"r1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, \"world\"!\n","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":3}}}`},
		{"calls then text and calls",
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a"}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}`,
			`{"id":"r2","choices":[{"index":0,"message":{"role":"assistant","content":"Done.","tool_calls":[{"id":"b"},{"id":"c"}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":6,"total_tokens":36}}`,
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"Done.","tool_calls":[{"id":"a"},{"id":"b"},{"id":"c"}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":10,"total_tokens":40}}`},
		{"first without calls or usage, next text null",
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"tool_calls"}]}`,
			`{"id":"r2","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"b"}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			`{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":"A","tool_calls":[{"id":"b"}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`},
		{"next without usage",
			`{"choices":[{"index":0,"message":{"content":"A"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
			`{"choices":[{"index":0,"message":{"content":"B"},"finish_reason":"stop"}]}`,
			`{"choices":[{"index":0,"message":{"content":"AB"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := []byte(tt.next)
			out, err := apitest.CheckTurn(t, []byte(tt.first), func(b []byte) ([]byte, error) { return c.MergeReplies(b, next) })
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			require.Equal(t, tt.next, string(next))
		})
	}
	for _, bad := range [][2]string{{`{`, `{}`}, {`{"choices":[{"message":{}}]}`, `[]`}, {`{}`, `{"choices":[{"message":{}}]}`},
		{`{"choices":[{"message":{"content":1}}]}`, `{"choices":[{"message":{"content":"x"}}]}`},
		{`{"choices":[{"message":{}}]}`, `{"choices":[{"message":{"tool_calls":{}}}]}`}} {
		_, err := c.MergeReplies([]byte(bad[0]), []byte(bad[1]))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}
}

// TestChatTurnRoundTrip runs the turn engine's sequence on the fixtures:
// the reply and shepherd's results appended to the conversation parse back
// as the assistant turn and its tool messages; EditReply and MergeReplies
// read back as expected.
func TestChatTurnRoundTrip(t *testing.T) {
	c := apitest.CodecFor(Descriptor)
	codec := c.(rewrite.Codec)
	body, reply := apitest.Fixture(t, Descriptor, "request.json"), apitest.Fixture(t, Descriptor, "reply.json")
	before, err := codec.ParseRequest(body)
	require.NoError(t, err)
	before.Messages = apitest.StripDigests(t, before.Messages)
	asMsgs, err := c.ReplyAsMessages(reply)
	require.NoError(t, err)
	results, err := c.ToolResultMessages([]conv.ToolResult{{CallID: "call_a", Content: "package main"}, {CallID: "call_b", Content: "refused: not in scope", IsError: true}})
	require.NoError(t, err)
	out, err := apitest.CheckTurn(t, body, func(b []byte) ([]byte, error) { return c.AppendMessages(b, append(asMsgs, results...)) })
	require.NoError(t, err)
	msgs := rewrite.BlocksElems(gjson.GetBytes(body, "messages"))
	last := jsonkit.ValueEnd(msgs[len(msgs)-1])
	require.Equal(t, string(body[:last]), string(out[:last]), "the conversation must stay byte-identical")
	require.Equal(t, string(body[last:]), string(out[len(out)-(len(body)-last):]))
	after, err := codec.ParseRequest(out)
	require.NoError(t, err)
	after.Messages = apitest.StripDigests(t, after.Messages)
	require.Equal(t, before.Messages, after.Messages[:len(before.Messages)])
	tail := after.Messages[len(before.Messages):]
	require.Equal(t, []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			{Kind: conv.BlockText, Text: "Reading it."},
			{Kind: conv.BlockToolCall, ToolCallID: "call_a", ToolName: "read_file", Args: []byte(`{"path":"main.go"}`)},
			{Kind: conv.BlockToolCall, ToolCallID: "call_b", ToolName: "read_file", Args: []byte(`{"path":"go.mod"}`)},
		}},
		{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "call_a", ToolName: "read_file", Text: "package main"}}},
		{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "call_b", ToolName: "read_file", Text: "refused: not in scope"}}},
	}, tail)

	edited, err := apitest.CheckTurn(t, reply, func(b []byte) ([]byte, error) { return c.EditReply(b, []int{0}, nil) })
	require.NoError(t, err)
	r, err := codec.ParseReply(edited)
	require.NoError(t, err)
	require.Equal(t, []conv.ToolCall{{Index: 0, ID: "call_b", Name: "read_file", Args: []byte(`{"path":"go.mod"}`)}}, r.ToolCalls)
	require.Equal(t, conv.StopToolUse, r.Stop)

	merged, err := apitest.CheckTurn(t, reply, func(b []byte) ([]byte, error) { return c.MergeReplies(b, reply) })
	require.NoError(t, err)
	r, err = codec.ParseReply(merged)
	require.NoError(t, err)
	require.Equal(t, "Reading it.Reading it.", r.Text)
	require.Len(t, r.ToolCalls, 4)
	require.Equal(t, conv.Usage{InputTokens: 50, OutputTokens: 24}, r.Usage)
	require.Equal(t, int64(74), gjson.GetBytes(merged, "usage.total_tokens").Int())
}

// FuzzChatTurn runs the positional and reply edits on fuzzed bodies: they
// never panic, and on a body ParseRequest (or, for replies, gjson) accepts a
// successful edit gives valid JSON.
func FuzzChatTurn(f *testing.F) {
	apitest.SeedOpenAITurn(f, Descriptor, chatConv, chatReplyCalls)
	c := apitest.CodecFor(Descriptor)
	f.Fuzz(func(t *testing.T, body []byte, pos int, text string) {
		apitest.FuzzOpenAITurn(t, c, body, pos, text)
	})
}
