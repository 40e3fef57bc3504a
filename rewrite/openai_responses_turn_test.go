package rewrite

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

func TestResponsesRanges(t *testing.T) {
	tests := []struct {
		input string
		want  [][2]int
	}{
		{`[]`, nil},
		{`[{"role":"user","content":"q"}]`, [][2]int{{0, 1}}},
		{`[{"type":"message","role":"developer","content":"d"},{"role":"user","content":"q"},
		   {"type":"reasoning","id":"rs"},{"type":"message","role":"assistant","content":"a"},{"type":"function_call","call_id":"c"},
		   {"type":"function_call_output","call_id":"c","output":"r"},
		   {"type":"web_search_call","id":"ws"},{"type":"local_shell_call_output","id":"o"},{"type":"item_reference","id":"x"},
		   {"type":"function_call","call_id":"d"},{"role":"user","content":"u"},{"role":"assistant","content":"z"}]`,
			[][2]int{{0, 1}, {1, 2}, {2, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 10}, {10, 11}, {11, 12}}},
		{`[{"role":"user","content":"q"},{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"x"},
		   {"type":"function_call","call_id":"s"},{"type":"custom_tool_call","call_id":"p2","name":"apply_patch","input":""},
		   {"type":"custom_tool_call_output","call_id":"p","output":"ok"},{"type":"function_call_output","call_id":"s","output":"ok"},
		   {"type":"custom_tool_call","call_id":"p3","name":"apply_patch","input":"y"}]`,
			[][2]int{{0, 1}, {1, 4}, {4, 5}, {5, 6}, {6, 7}}},
	}
	for _, tt := range tests {
		body := []byte(`{"input":` + tt.input + `}`)
		in, err := readResponsesInput(body)
		require.NoError(t, err)
		require.Equal(t, tt.want, in.ranges, tt.input)
		req, err := codecFor(OpenAIResponses).ParseRequest(body)
		require.NoError(t, err)
		require.Len(t, req.Messages, len(tt.want), "ranges must match the view")
	}
	in, err := readResponsesInput([]byte(`{"input":"hi"}`))
	require.NoError(t, err)
	require.True(t, in.str)
	require.Equal(t, 1, in.views())
	in, err = readResponsesInput([]byte(`{"model":"m"}`))
	require.NoError(t, err)
	require.Equal(t, 0, in.views())
	_, err = readResponsesInput([]byte(`{"input":[1]}`))
	require.ErrorIs(t, err, ErrMalformed)
	_, err = readResponsesInput([]byte(`{"input":{}}`))
	require.ErrorIs(t, err, ErrMalformed)
}

func TestResponsesReplyAsMessages(t *testing.T) {
	c := codecFor(OpenAIResponses)
	items, err := oaCheckItemsOut(t, fixture(t, OpenAIResponses, "reply.json"), c.ReplyAsMessages)
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"type":"reasoning","id":"rs_2","summary":[{"type":"summary_text","text":"Look at it."}]}`,
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Reading it.","annotations":[]}]}`,
		`{"type":"function_call","id":"fc_1","call_id":"call_9","name":"read_file","arguments":"{\"path\":\"main.go\"}","status":"completed"}`,
	}, oaStrs(items))
	items, err = c.ReplyAsMessages([]byte(`{"output":[ {"type":"reasoning","encrypted_content":"gAAA"} ]}`))
	require.NoError(t, err)
	require.Equal(t, []string{`{"type":"reasoning","encrypted_content":"gAAA"}`}, oaStrs(items))
	items, err = c.ReplyAsMessages([]byte(`{"status":"failed","output":[]}`))
	require.NoError(t, err)
	require.Empty(t, items)
	for _, bad := range []string{`x`, `[]`, `{}`, `{"output":{}}`, `{"output":[1]}`} {
		_, err := c.ReplyAsMessages([]byte(bad))
		require.ErrorIs(t, err, ErrMalformedReply, bad)
	}
}

func TestResponsesToolResultMessages(t *testing.T) {
	c := codecFor(OpenAIResponses)
	items, err := c.ToolResultMessages([]conv.ToolResult{
		{CallID: "call_1", Content: "ok"},
		{CallID: "call_2", Content: "Refused: \"bash\" is outside intent <fix-bug>\n", IsError: true},
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"type":"function_call_output","call_id":"call_1","output":"ok"}`,
		`{"type":"function_call_output","call_id":"call_2","output":"Refused: \"bash\" is outside intent <fix-bug>\n"}`,
	}, oaStrs(items))
	_, err = c.ToolResultMessages([]conv.ToolResult{{Content: "x"}})
	require.Error(t, err)

	// Answers to custom calls are custom_tool_call_output items; a refusal
	// is told by its text, as for function calls.
	items, err = c.ToolResultMessages([]conv.ToolResult{
		{CallID: "call_p", Name: "apply_patch", Content: "Refused: \"apply_patch\" is outside intent <fix-bug>\n", IsError: true, Freeform: true},
		{CallID: "call_s", Name: "shell", Content: "ok"},
		{CallID: "call_q", Name: "note", Content: "noted", Freeform: true},
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		`{"type":"custom_tool_call_output","call_id":"call_p","output":"Refused: \"apply_patch\" is outside intent <fix-bug>\n"}`,
		`{"type":"function_call_output","call_id":"call_s","output":"ok"}`,
		`{"type":"custom_tool_call_output","call_id":"call_q","output":"noted"}`,
	}, oaStrs(items))
	var sdk responses.ResponseInputItemUnion
	require.NoError(t, json.Unmarshal(items[0], &sdk))
	require.Equal(t, "custom_tool_call_output", sdk.Type)
	require.Equal(t, "call_p", sdk.CallID)
}

// respConv is a Responses conversation whose view is: 0 developer, 1 user,
// 2 assistant (reasoning, message, two calls), 3 and 4 call outputs, 5 user.
const respConv = `{"model":"m","input":[` +
	`{"type":"message","role":"developer","content":"D"},` +
	`{"role":"user","content":"q"},` +
	`{"type":"reasoning","id":"rs","encrypted_content":"e"},` +
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},` +
	`{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},` +
	`{"type":"function_call","call_id":"b","name":"g","arguments":"{}"},` +
	`{"type":"function_call_output","call_id":"a","output":"ra"},` +
	`{"type":"function_call_output","call_id":"b","output":"rb"},` +
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"u"}]}` +
	`],"store":false}`

// respConvWith returns respConv with its items [s,e) replaced by ins.
func respConvWith(s, e int, ins string) string {
	items := []string{
		`{"type":"message","role":"developer","content":"D"}`,
		`{"role":"user","content":"q"}`,
		`{"type":"reasoning","id":"rs","encrypted_content":"e"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}`,
		`{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}`,
		`{"type":"function_call","call_id":"b","name":"g","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"a","output":"ra"}`,
		`{"type":"function_call_output","call_id":"b","output":"rb"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"u"}]}`,
	}
	var out []string
	out = append(out, items[:s]...)
	if ins != "" {
		out = append(out, ins)
	}
	out = append(out, items[e:]...)
	b := `{"model":"m","input":[`
	for i, it := range out {
		if i > 0 {
			b += ","
		}
		b += it
	}
	return b + `],"store":false}`
}

func TestResponsesPositionalEdits(t *testing.T) {
	c := codecFor(OpenAIResponses)
	require.Equal(t, respConv, respConvWith(0, 0, ""))
	res := []conv.ToolResult{{CallID: "x", Content: "r\"x"}, {CallID: "y", Content: "refused", IsError: true}}
	const resItems = `{"type":"function_call_output","call_id":"x","output":"r\"x"},{"type":"function_call_output","call_id":"y","output":"refused"}`
	item := func(s string) [][]byte { return [][]byte{[]byte(s)} }
	tests := []struct {
		name string
		body string
		edit func([]byte) ([]byte, error)
		want string
	}{
		{"append", respConv,
			func(b []byte) ([]byte, error) {
				return c.AppendMessages(b, [][]byte{[]byte(`{"type":"function_call","call_id":"z"}`), []byte(`{"type":"function_call_output","call_id":"z","output":"o"}`)})
			},
			respConvWith(9, 9, `{"type":"function_call","call_id":"z"},{"type":"function_call_output","call_id":"z","output":"o"}`)},
		{"append to string input", `{"input":"hi \"you\"","stream":false}`,
			func(b []byte) ([]byte, error) { return c.AppendMessages(b, item(`{"type":"reasoning","id":"r"}`)) },
			`{"input":[{"role":"user","content":"hi \"you\""},{"type":"reasoning","id":"r"}],"stream":false}`},
		{"append creates input", `{"model":"m"}`,
			func(b []byte) ([]byte, error) { return c.AppendMessages(b, item(`{"role":"user","content":"q"}`)) },
			`{"model":"m","input":[{"role":"user","content":"q"}]}`},
		{"append to null input", `{"input":null}`,
			func(b []byte) ([]byte, error) { return c.AppendMessages(b, item(`{"role":"user","content":"q"}`)) },
			`{"input":[{"role":"user","content":"q"}]}`},
		{"replace merged assistant", respConv,
			func(b []byte) ([]byte, error) {
				return c.ReplaceMessages(b, 2, item(`{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}`))
			},
			respConvWith(2, 6, `{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}`)},
		{"remove merged assistant", respConv,
			func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 2, nil) },
			respConvWith(2, 6, "")},
		{"replace result", respConv,
			func(b []byte) ([]byte, error) {
				return c.ReplaceMessages(b, 4, item(`{"type":"function_call_output","call_id":"b","output":"x"}`))
			},
			respConvWith(7, 8, `{"type":"function_call_output","call_id":"b","output":"x"}`)},
		{"remove last", respConv,
			func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 5, nil) },
			respConvWith(8, 9, "")},
		{"replace string input", `{"input": "hi" }`,
			func(b []byte) ([]byte, error) {
				return c.ReplaceMessages(b, 0, [][]byte{[]byte(`{"role":"user","content":"a"}`), []byte(`{"role":"user","content":"b"}`)})
			},
			`{"input": [{"role":"user","content":"a"},{"role":"user","content":"b"}] }`},
		{"remove string input", `{"input":"hi"}`,
			func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 0, nil) },
			`{"input":[]}`},
		{"prepend results after the assistant range", respConv,
			func(b []byte) ([]byte, error) { return c.PrependToolResults(b, 2, res) },
			respConvWith(6, 6, resItems)},
		{"prepend results at the end", `{"input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"x"}]}`,
			func(b []byte) ([]byte, error) { return c.PrependToolResults(b, 1, res[:1]) },
			`{"input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"x"},{"type":"function_call_output","call_id":"x","output":"r\"x"}]}`},
		{"user text on string content", respConv,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 1, []string{"T1", "T\"2"}) },
			respConvWith(1, 2, `{"role":"user","content":[{"type":"input_text","text":"q"},{"type":"input_text","text":"T1"},{"type":"input_text","text":"T\"2"}]}`)},
		{"user text on parts", respConv,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 5, []string{"T"}) },
			respConvWith(8, 9, `{"type":"message","role":"user","content":[{"type":"input_text","text":"u"},{"type":"input_text","text":"T"}]}`)},
		{"user text after the results", respConv,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 3, []string{"T"}) },
			respConvWith(8, 8, `{"role":"user","content":[{"type":"input_text","text":"T"}]}`)},
		{"user text after the last result", `{"input":[{"type":"function_call","call_id":"x"},{"type":"function_call_output","call_id":"x","output":"o"}]}`,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 1, []string{"T"}) },
			`{"input":[{"type":"function_call","call_id":"x"},{"type":"function_call_output","call_id":"x","output":"o"},{"role":"user","content":[{"type":"input_text","text":"T"}]}]}`},
		{"user text on string input", `{"input":"hi","model":"m"}`,
			func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 0, []string{"T"}) },
			`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_text","text":"T"}]}],"model":"m"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := oaCheckTurn(t, []byte(tt.body), tt.edit)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			_, err = c.(Codec).ParseRequest(out)
			require.NoError(t, err)
		})
	}
}

func TestResponsesPositionalErrors(t *testing.T) {
	c := codecFor(OpenAIResponses)
	body := []byte(respConv)
	item := [][]byte{[]byte(`{"role":"user","content":"x"}`)}
	for name, f := range map[string]func() ([]byte, error){
		"replace -1":        func() ([]byte, error) { return c.ReplaceMessages(body, -1, item) },
		"replace n":         func() ([]byte, error) { return c.ReplaceMessages(body, 6, item) },
		"replace string 1":  func() ([]byte, error) { return c.ReplaceMessages([]byte(`{"input":"q"}`), 1, item) },
		"replace no input":  func() ([]byte, error) { return c.ReplaceMessages([]byte(`{}`), 0, item) },
		"prepend on user":   func() ([]byte, error) { return c.PrependToolResults(body, 1, []conv.ToolResult{{CallID: "x"}}) },
		"prepend on result": func() ([]byte, error) { return c.PrependToolResults(body, 3, []conv.ToolResult{{CallID: "x"}}) },
		"prepend on string": func() ([]byte, error) {
			return c.PrependToolResults([]byte(`{"input":"q"}`), 0, []conv.ToolResult{{CallID: "x"}})
		},
		"prepend n":              func() ([]byte, error) { return c.PrependToolResults(body, 6, []conv.ToolResult{{CallID: "x"}}) },
		"user text on assistant": func() ([]byte, error) { return c.AppendUserTextAt(body, 2, []string{"t"}) },
		"user text on developer": func() ([]byte, error) { return c.AppendUserTextAt(body, 0, []string{"t"}) },
		"user text n":            func() ([]byte, error) { return c.AppendUserTextAt(body, 6, []string{"t"}) },
		"item not an object":     func() ([]byte, error) { return c.AppendMessages(body, [][]byte{[]byte(`"x"`)}) },
		"input not array":        func() ([]byte, error) { return c.AppendMessages([]byte(`{"input":5}`), item) },
		"body not an object":     func() ([]byte, error) { return c.AppendMessages([]byte(`[{"input":[]}]`), item) },
	} {
		out, err := f()
		require.Error(t, err, name)
		require.Nil(t, out, name)
	}
	require.Equal(t, respConv, string(body))
}

// respReplyCalls is a reply with reasoning, text and three calls, one after
// a second message.
const respReplyCalls = `{"id":"resp_1","status":"completed","output":[
  {"type":"reasoning","id":"rs_1","summary":[]},
  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"On it."}]},
  {"type":"function_call","call_id":"a","name":"create_new_topic","arguments":"{}"},
  {"type":"function_call","call_id":"b","name":"read_file","arguments":"{}"},
  {"type":"message","role":"assistant","content":[{"type":"output_text","text":" And"}]},
  {"type":"function_call","call_id":"c","name":"bash","arguments":"{}"}
 ],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`

func TestResponsesEditReply(t *testing.T) {
	c := codecFor(OpenAIResponses)
	const (
		rs  = `{"type":"reasoning","id":"rs_1","summary":[]}`
		m1  = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"On it."}]}`
		fa  = `{"type":"function_call","call_id":"a","name":"create_new_topic","arguments":"{}"}`
		fb  = `{"type":"function_call","call_id":"b","name":"read_file","arguments":"{}"}`
		m2  = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":" And"}]}`
		fc  = `{"type":"function_call","call_id":"c","name":"bash","arguments":"{}"}`
		sep = ",\n  "
	)
	wrapOut := func(items ...string) string {
		s := "{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[\n  "
		for i, it := range items {
			if i > 0 {
				s += sep
			}
			s += it
		}
		return s + "\n ],\"usage\":{\"input_tokens\":10,\"output_tokens\":5,\"total_tokens\":15}}"
	}
	require.Equal(t, respReplyCalls, wrapOut(rs, m1, fa, fb, m2, fc))
	tests := []struct {
		name          string
		remove, first []int
		want          string
		ids           []string
		stop          conv.StopReason
	}{
		{"remove one", []int{0}, nil, wrapOut(rs, m1, fb, m2, fc), []string{"b", "c"}, conv.StopToolUse},
		{"move last first", nil, []int{2}, wrapOut(rs, m1, fc, fa, fb, m2), []string{"c", "a", "b"}, conv.StopToolUse},
		{"remove and move", []int{0}, []int{2, 1}, wrapOut(rs, m1, fc, fb, m2), []string{"c", "b"}, conv.StopToolUse},
		{"remove all", []int{0, 1, 2}, nil, wrapOut(rs, m1, m2), nil, conv.StopEnd},
		{"nothing", nil, nil, respReplyCalls, []string{"a", "b", "c"}, conv.StopToolUse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := oaCheckTurn(t, []byte(respReplyCalls), func(b []byte) ([]byte, error) { return c.EditReply(b, tt.remove, tt.first) })
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			r, err := c.(Codec).ParseReply(out)
			require.NoError(t, err)
			var ids []string
			for i, tc := range r.ToolCalls {
				require.Equal(t, i, tc.Index)
				ids = append(ids, tc.ID)
			}
			require.Equal(t, tt.ids, ids)
			require.Equal(t, tt.stop, r.Stop)
			require.Equal(t, "On it. And", r.Text)
		})
	}
	out, err := c.EditReply([]byte(`{"status":"completed","output":[{"type":"function_call","call_id":"a"}]}`), []int{0}, nil)
	require.NoError(t, err)
	require.Equal(t, `{"status":"completed","output":[]}`, string(out))
	for _, bad := range []struct{ remove, first []int }{{[]int{3}, nil}, {nil, []int{-1}}, {[]int{1}, []int{1}}} {
		_, err := c.EditReply([]byte(respReplyCalls), bad.remove, bad.first)
		require.Error(t, err)
	}
	_, err = c.EditReply([]byte(`[`), []int{0}, nil)
	require.ErrorIs(t, err, ErrMalformedReply)
}

func TestResponsesMergeReplies(t *testing.T) {
	c := codecFor(OpenAIResponses)
	tests := []struct {
		name, first, next, want string
	}{
		{"continued after a claimed call",
			`{"id":"resp_1","object":"response","status":"completed","model":"m","previous_response_id":"resp_0","output":[{"type":"function_call","call_id":"a"}],"incomplete_details":null,"usage":{"input_tokens":10,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":14}}`,
			`{"id":"resp_2","object":"response","status":"incomplete","model":"m","previous_response_id":"resp_1","output":[{"type":"message","content":[{"type":"output_text","text":"x"}]}],"incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":36}}`,
			`{"id":"resp_2","object":"response","status":"incomplete","model":"m","previous_response_id":"resp_0","output":[{"type":"function_call","call_id":"a"},{"type":"message","content":[{"type":"output_text","text":"x"}]}],"incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":10,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":40}}`},
		{"outcome fields next lacks become null",
			`{"id":"r1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[ ]}`,
			`{"id":"r2","status":"completed","output":[{"type":"message"}]}`,
			`{"id":"r2","status":"completed","incomplete_details":null,"output":[{"type":"message"} ]}`},
		{"first without output or usage",
			`{"id":"r1"}`,
			`{"id":"r2","output":[{"type":"message"}],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`,
			`{"id":"r2","output":[{"type":"message"}],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := []byte(tt.next)
			out, err := oaCheckTurn(t, []byte(tt.first), func(b []byte) ([]byte, error) { return c.MergeReplies(b, next) })
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			require.Equal(t, tt.next, string(next))
		})
	}
	for _, bad := range [][2]string{{`{`, `{}`}, {`{}`, `1`}, {`{"output":{}}`, `{}`}, {`{}`, `{"output":"x"}`}} {
		_, err := c.MergeReplies([]byte(bad[0]), []byte(bad[1]))
		require.ErrorIs(t, err, ErrMalformedReply, bad)
	}
}

// TestResponsesTurnRoundTrip runs the turn engine's sequence on the
// fixtures, for an array input and a string input.
func TestResponsesTurnRoundTrip(t *testing.T) {
	c := codecFor(OpenAIResponses)
	codec := c.(Codec)
	reply := fixture(t, OpenAIResponses, "reply.json")
	asMsgs, err := c.ReplyAsMessages(reply)
	require.NoError(t, err)
	results, err := c.ToolResultMessages([]conv.ToolResult{{CallID: "call_9", Content: "refused: outside scope", IsError: true}})
	require.NoError(t, err)
	wantTail := []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			{Kind: conv.BlockThinking, Text: "Look at it."},
			{Kind: conv.BlockText, Text: "Reading it."},
			{Kind: conv.BlockToolCall, ToolCallID: "call_9", ToolName: "read_file", Args: []byte(`{"path":"main.go"}`)},
		}},
		{Role: conv.RoleTool, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: "call_9", ToolName: "read_file", Text: "refused: outside scope"}}},
	}
	for _, body := range [][]byte{fixture(t, OpenAIResponses, "request.json"), []byte(`{"model":"m","input":"Show me main.go"}`)} {
		before, err := codec.ParseRequest(body)
		require.NoError(t, err)
		before.Messages = stripDigests(t, before.Messages)
		out, err := oaCheckTurn(t, body, func(b []byte) ([]byte, error) { return c.AppendMessages(b, append(asMsgs, results...)) })
		require.NoError(t, err)
		after, err := codec.ParseRequest(out)
		require.NoError(t, err)
		after.Messages = stripDigests(t, after.Messages)
		require.Len(t, after.Messages, len(before.Messages)+2)
		require.Equal(t, before.Messages, after.Messages[:len(before.Messages)])
		require.Equal(t, wantTail, after.Messages[len(before.Messages):])
		if !before.Opening() {
			require.Equal(t, before.Fingerprint, after.Fingerprint)
		}
	}

	edited, err := oaCheckTurn(t, reply, func(b []byte) ([]byte, error) { return c.EditReply(b, []int{0}, nil) })
	require.NoError(t, err)
	r, err := codec.ParseReply(edited)
	require.NoError(t, err)
	require.Empty(t, r.ToolCalls)
	require.Equal(t, conv.StopEnd, r.Stop)
	require.Equal(t, "Reading it.", r.Text)

	merged, err := oaCheckTurn(t, reply, func(b []byte) ([]byte, error) { return c.MergeReplies(b, reply) })
	require.NoError(t, err)
	r, err = codec.ParseReply(merged)
	require.NoError(t, err)
	require.Equal(t, "Reading it.Reading it.", r.Text)
	require.Len(t, r.ToolCalls, 2)
	require.Equal(t, conv.Usage{InputTokens: 90, OutputTokens: 32}, r.Usage)
	require.Equal(t, int64(122), gjson.GetBytes(merged, "usage.total_tokens").Int())
	require.Equal(t, int64(16), gjson.GetBytes(merged, "usage.output_tokens_details.reasoning_tokens").Int())
}

// FuzzResponsesTurn is FuzzChatTurn for Responses; it also checks that the
// view ranges match the view ParseRequest builds.
func FuzzResponsesTurn(f *testing.F) {
	oaSeedTurnFuzz(f, OpenAIResponses, respConv, respReplyCalls, `{"input":"hi"}`,
		`{"input":[{"type":"function_call","call_id":"x"},{"type":"function_call_output","call_id":"x","output":"o"}]}`,
		respCustomConv, respReplyCustom,
		`{"input":[{"type":"custom_tool_call","call_id":"x","name":"apply_patch","input":"a\n\"b"},{"type":"custom_tool_call_output","call_id":"x","output":"o"}]}`,
		`{"input":[{"role":"user","content":"q"},{"type":"custom_tool_call","call_id":"x","input":""},{"type":"function_call","call_id":"y"}]}`,
		`{"status":"completed","output":[{"type":"custom_tool_call","call_id":"x","input":"p"},{"type":"function_call","call_id":"y"}]}`)
	c := codecFor(OpenAIResponses)
	f.Fuzz(func(t *testing.T, body []byte, pos int, text string) {
		if req, err := c.(Codec).ParseRequest(body); err == nil {
			in, err := readResponsesInput(body)
			require.NoError(t, err)
			require.Equal(t, len(req.Messages), in.views())
			for v, r := range in.ranges {
				require.Equal(t, req.Messages[v].Role == conv.RoleAssistant, responsesAssistantItem(in.elems[r[0]]))
			}
		}
		oaFuzzTurn(t, c, body, pos, text)
	})
}

func TestResponsesEditReplyCustom(t *testing.T) {
	c := codecFor(OpenAIResponses)
	const (
		m   = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Patching."}]}`
		ft  = `{"type":"function_call","call_id":"t","name":"create_new_topic","arguments":"{\"title\":\"Fix\"}"}`
		cp  = `{"type":"custom_tool_call","id":"ctc_1","status":"completed","call_id":"p","name":"apply_patch","input":"*** Begin Patch\n*** Update File: a.go\n@@\n-x := 1\n+x := \"<2>\" // é\n*** End Patch\n"}`
		fs  = `{"type":"function_call","call_id":"s","name":"shell","arguments":"{}"}`
		cq  = `{"type":"custom_tool_call","id":"ctc_2","call_id":"q","name":"note","input":""}`
		sep = ",\n  "
	)
	wrapOut := func(items ...string) string {
		s := "{\"id\":\"resp_c\",\"status\":\"completed\",\"model\":\"gpt-5-codex\",\"output\":[\n  "
		for i, it := range items {
			if i > 0 {
				s += sep
			}
			s += it
		}
		return s + "\n ],\"usage\":{\"input_tokens\":10,\"output_tokens\":5,\"total_tokens\":15}}"
	}
	require.Equal(t, respReplyCustom, wrapOut(m, ft, cp, fs, cq))
	tests := []struct {
		name          string
		remove, first []int
		want          string
		ids           []string
	}{
		{"remove the topic call next to a custom call", []int{0}, nil, wrapOut(m, cp, fs, cq), []string{"p", "s", "q"}},
		{"remove a custom call next to a kept function call", []int{1}, nil, wrapOut(m, ft, fs, cq), []string{"t", "s", "q"}},
		{"remove both custom calls", []int{1, 3}, nil, wrapOut(m, ft, fs), []string{"t", "s"}},
		{"move a custom call first", nil, []int{3}, wrapOut(m, cq, ft, cp, fs), []string{"q", "t", "p", "s"}},
		{"remove topic, move function before custom", []int{0}, []int{2}, wrapOut(m, fs, cp, cq), []string{"s", "p", "q"}},
		{"remove all", []int{0, 1, 2, 3}, nil, wrapOut(m), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := oaCheckTurn(t, []byte(respReplyCustom), func(b []byte) ([]byte, error) { return c.EditReply(b, tt.remove, tt.first) })
			require.NoError(t, err)
			require.Equal(t, tt.want, string(out))
			r, err := c.(Codec).ParseReply(out)
			require.NoError(t, err)
			var ids []string
			for i, tc := range r.ToolCalls {
				require.Equal(t, i, tc.Index)
				require.Equal(t, tc.ID == "p" || tc.ID == "q", tc.Freeform, tc.ID)
				ids = append(ids, tc.ID)
			}
			require.Equal(t, tt.ids, ids)
			var sdk responses.Response
			require.NoError(t, json.Unmarshal(out, &sdk))
			for _, it := range sdk.Output {
				if it.Type == "custom_tool_call" && it.CallID == "p" {
					require.Equal(t, respPatch, it.AsCustomToolCall().Input)
				}
			}
		})
	}
	_, err := c.EditReply([]byte(respReplyCustom), []int{4}, nil)
	require.Error(t, err, "four calls in all")
}

func TestResponsesCustomPositional(t *testing.T) {
	c := codecFor(OpenAIResponses)
	body := `{"input":[{"role":"user","content":"q"},{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"x"},{"type":"function_call","call_id":"t","name":"create_new_topic","arguments":"{}"},{"type":"custom_tool_call_output","call_id":"p","output":"ok"}]}`
	res := []conv.ToolResult{{CallID: "t", Name: "create_new_topic", Content: "Topic changed"}, {CallID: "z", Content: "no", IsError: true, Freeform: true}}
	out, err := oaCheckTurn(t, []byte(body), func(b []byte) ([]byte, error) { return c.PrependToolResults(b, 1, res) })
	require.NoError(t, err)
	require.Equal(t, `{"input":[{"role":"user","content":"q"},{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"x"},{"type":"function_call","call_id":"t","name":"create_new_topic","arguments":"{}"},`+
		`{"type":"function_call_output","call_id":"t","output":"Topic changed"},{"type":"custom_tool_call_output","call_id":"z","output":"no"},`+
		`{"type":"custom_tool_call_output","call_id":"p","output":"ok"}]}`, string(out))
	out, err = oaCheckTurn(t, []byte(body), func(b []byte) ([]byte, error) { return c.AppendUserTextAt(b, 2, []string{"T"}) })
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(body, "]}")+`,{"role":"user","content":[{"type":"input_text","text":"T"}]}]}`, string(out))
	out, err = oaCheckTurn(t, []byte(body), func(b []byte) ([]byte, error) { return c.ReplaceMessages(b, 1, nil) })
	require.NoError(t, err)
	require.Equal(t, `{"input":[{"role":"user","content":"q"},{"type":"custom_tool_call_output","call_id":"p","output":"ok"}]}`, string(out))
}

// TestResponsesTurnRoundTripCustom runs the turn engine's sequence on a
// reply with a custom call and a claimed function call: the model's items
// and shepherd's results append to the request as the view expects.
func TestResponsesTurnRoundTripCustom(t *testing.T) {
	c := codecFor(OpenAIResponses)
	codec := c.(Codec)
	view, err := codec.ParseReply([]byte(respReplyCustom))
	require.NoError(t, err)
	asMsgs, err := c.ReplyAsMessages([]byte(respReplyCustom))
	require.NoError(t, err)
	require.Len(t, asMsgs, 5)
	var results []conv.ToolResult
	for _, tc := range view.ToolCalls {
		results = append(results, conv.ToolResult{CallID: tc.ID, Name: tc.Name, Content: "r-" + tc.ID, IsError: tc.Name == "apply_patch", Freeform: tc.Freeform})
	}
	resItems, err := c.ToolResultMessages(results)
	require.NoError(t, err)
	body := []byte(`{"model":"m","input":"fix it"}`)
	out, err := oaCheckTurn(t, body, func(b []byte) ([]byte, error) { return c.AppendMessages(b, append(asMsgs, resItems...)) })
	require.NoError(t, err)
	req, err := codec.ParseRequest(out)
	require.NoError(t, err)
	require.Len(t, req.Messages, 6)
	var calls []conv.ToolCall
	for _, b := range req.Messages[1].Blocks {
		if b.Kind == conv.BlockToolCall {
			calls = append(calls, conv.ToolCall{Index: len(calls), ID: b.ToolCallID, Name: b.ToolName, Args: b.Args, Freeform: b.Freeform})
		}
	}
	require.Equal(t, view.ToolCalls, calls, "the request view's calls are the reply view's")
	for i, m := range req.Messages[2:] {
		require.Equal(t, conv.RoleTool, m.Role)
		require.Equal(t, []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: calls[i].ID, ToolName: calls[i].Name,
			Text: "r-" + calls[i].ID, Freeform: calls[i].Freeform}}, m.Blocks)
	}
	// The anchors are the same when the agent sends the conversation back
	// re-serialised by the SDK.
	var sdk responses.Response
	require.NoError(t, json.Unmarshal([]byte(respReplyCustom), &sdk))
	p := sdk.Output[2].AsCustomToolCall().ToParam()
	resent, err := json.Marshal(p)
	require.NoError(t, err)
	require.NotEqual(t, string(asMsgs[2]), string(resent))
	out2, err := c.AppendMessages(body, append(append(append([][]byte{}, asMsgs[:2]...), resent), append(asMsgs[3:], resItems...)...))
	require.NoError(t, err)
	req2, err := codec.ParseRequest(out2)
	require.NoError(t, err)
	require.Equal(t, conv.Anchors(req.Messages), conv.Anchors(req2.Messages))
}

// round is one round of longConversation (conversationRounds).
func (responsesCodec) round(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","content":"step %d"}`, i),
		fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"Read","arguments":"{}"}`, id),
		fmt.Sprintf(`{"type":"function_call","call_id":"%s-b","name":"Read","arguments":"{}"}`, id),
		fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"r%d"}`, id, i),
		fmt.Sprintf(`{"type":"function_call_output","call_id":"%s-b","output":"s%d"}`, id, i)}
}
