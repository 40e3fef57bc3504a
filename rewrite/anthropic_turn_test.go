package rewrite

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

var anthTC = codecFor(Anthropic)

// Messages of the Anthropic test conversation.
const (
	anU0 = `{"role":"user","content":"hi"}`
	anA1 = `{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"S"},{"type":"redacted_thinking","data":"D"},{"type":"tool_use","id":"a","name":"x","input":{}}]}`
	anU2 = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}`
	anA3 = `{"role":"assistant","content":"done"}`
)

// anBody builds a request body holding msgs.
func anBody(msgs ...string) string {
	return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
}

// The results shepherd answers with, and their rendered blocks.
var (
	agResults = []conv.ToolResult{
		{CallID: "s1", Name: "create_new_topic", Content: "ok"},
		{CallID: "s2", Name: "rm", Content: "blocked", IsError: true},
	}
	anTR = `{"type":"tool_result","tool_use_id":"s1","content":"ok"},{"type":"tool_result","tool_use_id":"s2","content":"blocked","is_error":true}`
)

func anPrepend(pos int, results []conv.ToolResult) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return anthTC.PrependToolResults(b, pos, results) }
}

func TestAnthropicPrependToolResults(t *testing.T) {
	pretty := "{\n  \"messages\": [\n    {\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"x\"}]},\n" +
		"    {\"role\": \"user\", \"content\": [ {\"type\": \"text\", \"text\": \"y\"} ]}\n  ]\n}\n"
	agRunCases(t, []agCase{
		{name: "before existing results", body: anBody(anU0, anA1, anU2), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`,{"type":"tool_result","tool_use_id":"a","content":"r"}]}`)},
		{name: "string content", body: anBody(anU0, anA1, `{"role":"user","content":"go \"on\"\u00e9"}`), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`,{"type":"text","text":"go \"on\"\u00e9"}]}`)},
		{name: "empty string content", body: anBody(anU0, anA1, `{"role":"user","content":" "}`), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`)},
		{name: "null content", body: anBody(anU0, anA1, `{"role":"user","content":null}`), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`)},
		{name: "missing content", body: anBody(anU0, anA1, `{"role":"user"}`), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`)},
		{name: "empty array", body: anBody(anU0, anA1, `{"role":"user","content":[ ]}`), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+` ]}`)},
		{name: "no next message", body: anBody(anU0, anA1), run: anPrepend(1, agResults[:1]),
			want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"s1","content":"ok"}]}`)},
		{name: "next is assistant", body: anBody(anU0, anA1, anA3), run: anPrepend(1, agResults),
			want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`, anA3)},
		{name: "pretty", body: pretty, run: anPrepend(0, agResults),
			want: strings.Replace(pretty, `"content": [ {"type": "text", "text": "y"}`, `"content": [`+anTR+`, {"type": "text", "text": "y"}`, 1)},
		{name: "no results", body: anBody(anU0, anA1), run: anPrepend(1, nil), want: anBody(anU0, anA1)},
		{name: "not assistant", body: anBody(anU0, anA1), run: anPrepend(0, agResults), err: `does not have role "assistant"`},
		{name: "past end", body: anBody(anU0, anA1), run: anPrepend(2, agResults), err: "out of range"},
		{name: "negative", body: anBody(anU0, anA1), run: anPrepend(-1, agResults), err: "out of range"},
		{name: "bad next content", body: anBody(anA1, `{"role":"user","content":5}`), run: anPrepend(0, agResults), err: "messages[1].content"},
		{name: "no call id", body: anBody(anA1), run: anPrepend(0, []conv.ToolResult{{Content: "x"}}), err: "no call id"},
		{name: "invalid body", body: `{"messages":[`, run: anPrepend(0, agResults), err: "malformed"},
		{name: "no messages", body: `{}`, run: anPrepend(0, agResults), err: "messages must be an array"},
	})
}

func TestAnthropicAppendUserTextAt(t *testing.T) {
	at := func(pos int, texts ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.AppendUserTextAt(b, pos, texts) }
	}
	agRunCases(t, []agCase{
		{name: "string", body: anBody(anU0, anA1, anU2), run: at(0, "note", `a"<b>`+"\n"),
			want: anBody(`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"note"},{"type":"text","text":"a\"<b>\n"}]}`, anA1, anU2)},
		{name: "array after results", body: anBody(anU0, anA1, anU2), run: at(2, "note"),
			want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"note"}]}`)},
		{name: "no texts", body: anBody(anU0), run: at(0), want: anBody(anU0)},
		{name: "assistant", body: anBody(anU0, anA1), run: at(1, "x"), err: `does not have role "user"`},
		{name: "out of range", body: anBody(anU0), run: at(1, "x"), err: "out of range"},
	})
}

func TestAnthropicReplaceAndAppendMessages(t *testing.T) {
	rep := func(pos int, items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.ReplaceMessages(b, pos, agItems(items...)) }
	}
	app := func(items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.AppendMessages(b, agItems(items...)) }
	}
	pretty := "{\"messages\": [\n  " + anU0 + ",\n  " + anA1 + ",\n  " + anU2 + "\n]}"
	agRunCases(t, []agCase{
		{name: "replace with two", body: anBody(anU0, anA1, anU2), run: rep(1, anA3, anU0), want: anBody(anU0, anA3, anU0, anU2)},
		{name: "replace with one", body: anBody(anU0, anA1, anU2), run: rep(2, anA3), want: anBody(anU0, anA1, anA3)},
		{name: "remove first", body: anBody(anU0, anA1, anU2), run: rep(0), want: anBody(anA1, anU2)},
		{name: "remove middle", body: anBody(anU0, anA1, anU2), run: rep(1), want: anBody(anU0, anU2)},
		{name: "remove last", body: anBody(anU0, anA1, anU2), run: rep(2), want: anBody(anU0, anA1)},
		{name: "remove only", body: `{"messages":[ ` + anU0 + ` ]}`, run: rep(0), want: `{"messages":[  ]}`},
		{name: "remove pretty", body: pretty, run: rep(1), want: "{\"messages\": [\n  " + anU0 + ",\n  " + anU2 + "\n]}"},
		{name: "replace out of range", body: anBody(anU0), run: rep(1, anA3), err: "out of range"},
		{name: "replace bad item", body: anBody(anU0), run: rep(0, `{"role":`), err: "not valid JSON"},
		{name: "replace scalar item", body: anBody(anU0), run: rep(0, `"x"`), err: "not a JSON object"},
		{name: "append two", body: anBody(anU0), run: app(anA1, anU2), want: anBody(anU0, anA1, anU2)},
		{name: "append to empty", body: `{"model":"m","messages":[]}`, run: app(anU0), want: anBody(anU0)},
		{name: "append to missing", body: `{"model":"m"}`, run: app(anU0), want: anBody(anU0)},
		{name: "append to null", body: `{"model":"m","messages":null}`, run: app(anU0), want: anBody(anU0)},
		{name: "append pretty", body: pretty, run: app(anA3), want: "{\"messages\": [\n  " + anU0 + ",\n  " + anA1 + ",\n  " + anU2 + "," + anA3 + "\n]}"},
		{name: "append nothing", body: anBody(anU0), run: app(), want: anBody(anU0)},
		{name: "append to object", body: `{"messages":{}}`, run: app(anU0), err: "messages must be an array"},
	})
}

// agItems converts strings to items.
func agItems(items ...string) [][]byte {
	out := make([][]byte, len(items))
	for i, s := range items {
		out[i] = []byte(s)
	}
	return out
}

func TestAnthropicReplyAsMessagesAndToolResults(t *testing.T) {
	reply := []byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"S"}, {"type":"text","text":"x"}],"stop_reason":"end_turn"}`)
	items, err := anthTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	scribble(reply)
	require.Equal(t, []string{`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"S"}, {"type":"text","text":"x"}]}`}, agStrings(items))

	fx := fixture(t, Anthropic, "reply.json")
	items, err = anthTC.ReplyAsMessages(fx)
	require.NoError(t, err)
	require.Equal(t, `{"role":"assistant","content":`+gjson.GetBytes(fx, "content").Raw+`}`, string(items[0]))

	for _, bad := range []string{`{"content":"x"}`, `{}`, `[]`, `{"content":[}`} {
		_, err := anthTC.ReplyAsMessages([]byte(bad))
		require.ErrorIs(t, err, ErrMalformedReply, bad)
	}

	items, err = anthTC.ToolResultMessages(append(agResults, conv.ToolResult{CallID: "s\"3", Content: "a\"b\\c\n\t<&>\u2028\x01"}))
	require.NoError(t, err)
	require.Equal(t, []string{`{"role":"user","content":[` + anTR +
		`,{"type":"tool_result","tool_use_id":"s\"3","content":"a\"b\\c\n\t<&>\u2028\u0001"}]}`}, agStrings(items))
	var decoded struct {
		Content []struct {
			ToolUseID string `json:"tool_use_id"`
			Content   string `json:"content"`
			IsError   bool   `json:"is_error"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(items[0], &decoded))
	require.Equal(t, "a\"b\\c\n\t<&>\u2028\x01", decoded.Content[2].Content)
	require.Equal(t, "s\"3", decoded.Content[2].ToolUseID)
	require.True(t, decoded.Content[1].IsError)

	items, err = anthTC.ToolResultMessages(nil)
	require.NoError(t, err)
	require.Empty(t, items)
	_, err = anthTC.ToolResultMessages([]conv.ToolResult{{Name: "x"}})
	require.ErrorContains(t, err, "no call id")
}

// agStrings converts items to strings for comparison.
func agStrings(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// Blocks of the Anthropic test reply.
const (
	anTH = `{"type":"thinking","thinking":"t","signature":"S"}`
	anTA = `{"type":"text","text":"A"}`
	anC0 = `{"type":"tool_use","id":"t0","name":"n0","input":{}}`
	anTB = `{"type":"text","text":"B"}`
	anC1 = `{"type":"tool_use","id":"t1","name":"n1","input":{"k":1}}`
	anC2 = `{"type":"tool_use","id":"t2","name":"n2","input":{}}`
)

// anReply builds a reply with blocks and the raw stop reason member (or none).
func anReply(stop string, blocks ...string) string {
	s := `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[` + strings.Join(blocks, ",") + `]`
	if stop != "" {
		s += `,"stop_reason":` + stop
	}
	return s + `,"usage":{"input_tokens":10,"output_tokens":5}}`
}

func TestAnthropicEditReply(t *testing.T) {
	edit := func(remove, first []int) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.EditReply(b, remove, first) }
	}
	full := anReply(`"tool_use"`, anTH, anTA, anC0, anTB, anC1, anC2)
	agRunCases(t, []agCase{
		{name: "nothing", body: full, run: edit(nil, nil), want: full},
		{name: "remove middle", body: full, run: edit([]int{1}, nil), want: anReply(`"tool_use"`, anTH, anTA, anC0, anTB, anC2)},
		{name: "move last first", body: full, run: edit(nil, []int{2}), want: anReply(`"tool_use"`, anTH, anTA, anC2, anC0, anTB, anC1)},
		{name: "remove and move", body: full, run: edit([]int{0}, []int{2, 1}), want: anReply(`"tool_use"`, anTH, anTA, anC2, anC1, anTB)},
		{name: "move first in place", body: full, run: edit(nil, []int{0}), want: full},
		{name: "remove all", body: full, run: edit([]int{2, 0, 1}, nil), want: anReply(`"end_turn"`, anTH, anTA, anTB)},
		{name: "remove all null stop", body: anReply(`null`, anC0), run: edit([]int{0}, nil), want: anReply(`"end_turn"`)},
		{name: "remove all no stop", body: anReply("", anTA, anC0), run: edit([]int{0}, nil),
			want: strings.TrimSuffix(anReply("", anTA), "}") + `,"stop_reason":"end_turn"}`},
		{name: "remove all max_tokens", body: anReply(`"max_tokens"`, anTA, anC0), run: edit([]int{0}, nil), want: anReply(`"max_tokens"`, anTA)},
		{name: "out of range", body: full, run: edit([]int{3}, nil), err: "out of range"},
		{name: "no content", body: `{"stop_reason":"tool_use"}`, run: edit([]int{0}, nil), err: "content must be an array"},
		{name: "not JSON", body: `{"content":[`, run: edit([]int{0}, nil), err: "malformed upstream reply"},
	})

	// The reply view of the edited reply lists the remaining calls in order.
	out, err := anthTC.EditReply([]byte(full), []int{0}, []int{2})
	require.NoError(t, err)
	r, err := codecFor(Anthropic).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, []conv.ToolCall{
		{Index: 0, ID: "t2", Name: "n2", Args: []byte(`{}`)},
		{Index: 1, ID: "t1", Name: "n1", Args: []byte(`{"k":1}`)},
	}, r.ToolCalls)
	require.Equal(t, "AB", r.Text)

	// The pretty-printed fixture keeps its layout and its thinking block.
	fx := fixture(t, Anthropic, "reply.json")
	out, err = anthTC.EditReply(fx, []int{0}, nil)
	require.NoError(t, err)
	require.True(t, isSubsequence(out, fx))
	require.Contains(t, string(out), `{"type": "thinking", "thinking": "Need the file.", "signature": "EqQB..."},`+"\n    ")
	r, err = codecFor(Anthropic).ParseReply(out)
	require.NoError(t, err)
	require.Len(t, r.ToolCalls, 1)
	require.Equal(t, "toolu_01Y", r.ToolCalls[0].ID)
	require.Equal(t, conv.StopToolUse, r.Stop)
	out, err = anthTC.EditReply(fx, []int{0, 1}, nil)
	require.NoError(t, err)
	require.Equal(t, strings.Replace(string(fx), ",\n    {\"type\": \"tool_use\", \"id\": \"toolu_01X\", \"name\": \"read_file\", \"input\": {\"path\": \"main.go\"}},\n"+
		"    {\"type\": \"tool_use\", \"id\": \"toolu_01Y\", \"name\": \"list_dir\", \"input\": {}}", "", 1),
		strings.Replace(string(out), `"stop_reason": "end_turn"`, `"stop_reason": "tool_use"`, 1))
	require.Contains(t, string(out), `"stop_reason": "end_turn"`)
}

func TestAnthropicMergeReplies(t *testing.T) {
	first := `{"id":"msg_1","model":"c","content":[{"type":"thinking","thinking":"t","signature":"S"},{"type":"text","text":"Hello "}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"cache_read_input_tokens":50,"output_tokens":7}}`
	next := `{"id":"msg_2","model":"c2","content":[ {"type":"text","text":"world"}, {"type":"tool_use","id":"t","name":"read","input":{"p":1}} ],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":130,"cache_read_input_tokens":150,"output_tokens":9,"service_tier":"standard"}}`
	merge := func(next string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) {
			nb := []byte(next)
			out, err := anthTC.MergeReplies(b, nb)
			if err == nil {
				require.Equal(t, next, string(nb))
				kept := string(out)
				scribble(nb)
				require.Equal(t, kept, string(out), "output aliases next")
			}
			return out, err
		}
	}
	agRunCases(t, []agCase{
		{name: "merge", body: first, run: merge(next),
			want: `{"id":"msg_1","model":"c","content":[{"type":"thinking","thinking":"t","signature":"S"},{"type":"text","text":"Hello "},` +
				`{"type":"text","text":"world"}, {"type":"tool_use","id":"t","name":"read","input":{"p":1}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":130,"cache_read_input_tokens":150,"output_tokens":16,"service_tier":"standard"}}`},
		{name: "next empty", body: first, run: merge(`{"content":[],"stop_reason":"max_tokens","usage":{"input_tokens":1}}`),
			want: strings.Replace(strings.Replace(first, `"end_turn"`, `"max_tokens"`, 1),
				`{"input_tokens":100,"cache_read_input_tokens":50,"output_tokens":7}`, `{"input_tokens":1,"output_tokens":7}`, 1)},
		{name: "next without usage", body: first, run: merge(`{"content":[{"type":"text","text":"!"}],"stop_sequence":"END"}`),
			want: strings.Replace(strings.Replace(first, `"Hello "}`, `"Hello "},{"type":"text","text":"!"}`, 1), `"stop_sequence":null`, `"stop_sequence":"END"`, 1)},
		{name: "first without usage", body: `{"content":[]}`, run: merge(`{"content":[{"type":"text","text":"!"}],"usage":{"output_tokens":3}}`),
			want: `{"content":[{"type":"text","text":"!"}],"usage":{"output_tokens":3}}`},
		{name: "first without content", body: `{"usage":{}}`, run: merge(next), err: "content must be an array"},
		{name: "next content string", body: first, run: merge(`{"content":"x"}`), err: "next reply"},
		{name: "next invalid", body: first, run: merge(`{`), err: "next reply"},
	})

	out, err := anthTC.MergeReplies([]byte(first), []byte(next))
	require.NoError(t, err)
	r, err := codecFor(Anthropic).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "Hello world", r.Text)
	require.Equal(t, conv.Usage{InputTokens: 280, OutputTokens: 16}, r.Usage)
	require.Equal(t, "c", r.Model)
	require.Equal(t, conv.StopToolUse, r.Stop)
	require.Equal(t, []conv.ToolCall{{ID: "t", Name: "read", Args: []byte(`{"p":1}`)}}, r.ToolCalls)

	// Pretty-printed replies merge into valid JSON too.
	fx := fixture(t, Anthropic, "reply.json")
	out, err = anthTC.MergeReplies(fx, fx)
	require.NoError(t, err)
	require.True(t, gjson.ValidBytes(out))
	r, err = codecFor(Anthropic).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "Reading it.Reading it.", r.Text)
	require.Len(t, r.ToolCalls, 4)
	require.Equal(t, int64(114), r.Usage.OutputTokens)
	require.Equal(t, int64(812+100+2048), r.Usage.InputTokens)
}

// TestAnthropicTurnRoundTrip appends a reply and shepherd's results to a
// conversation, as the turn engine does before a follow-up request.
func TestAnthropicTurnRoundTrip(t *testing.T) {
	body := fixture(t, Anthropic, "request.json")
	reply := fixture(t, Anthropic, "reply.json")
	asst, err := anthTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	results, err := anthTC.ToolResultMessages([]conv.ToolResult{
		{CallID: "toolu_01X", Name: "read_file", Content: "package main"},
		{CallID: "toolu_01Y", Name: "list_dir", Content: "denied", IsError: true},
	})
	require.NoError(t, err)
	items := append(asst, results...)
	out, err := anthTC.AppendMessages(body, items)
	require.NoError(t, err)
	agScribbleItems(items)
	require.True(t, isSubsequence(body, out))
	req, err := codecFor(Anthropic).ParseRequest(out)
	require.NoError(t, err)
	req.Messages = stripDigests(t, req.Messages)
	n := len(req.Messages)
	require.Equal(t, 5, n)
	require.Equal(t, conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		{Kind: conv.BlockThinking, Text: "Need the file."},
		{Kind: conv.BlockText, Text: "Reading it."},
		{Kind: conv.BlockToolCall, ToolCallID: "toolu_01X", ToolName: "read_file", Args: []byte(`{"path": "main.go"}`)},
		{Kind: conv.BlockToolCall, ToolCallID: "toolu_01Y", ToolName: "list_dir", Args: []byte(`{}`)},
	}}, req.Messages[n-2])
	require.Equal(t, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		{Kind: conv.BlockToolResult, ToolCallID: "toolu_01X", ToolName: "read_file", Text: "package main"},
		{Kind: conv.BlockToolResult, ToolCallID: "toolu_01Y", ToolName: "list_dir", Text: "denied", IsError: true},
	}}, req.Messages[n-1])
	// The assistant message holds the reply's content bytes exactly.
	require.Equal(t, gjson.GetBytes(reply, "content").Raw, gjson.GetBytes(out, "messages.3.content").Raw)

	// The ledger's replay: the agent's next request carries only the
	// agent's call; shepherd puts its own result back first.
	agentCopy, err := anthTC.EditReply(reply, []int{1}, nil)
	require.NoError(t, err)
	agentAsst, err := anthTC.ReplyAsMessages(agentCopy)
	require.NoError(t, err)
	next, err := anthTC.AppendMessages(body, append(agentAsst,
		[]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01X","content":"package main"}]}`)))
	require.NoError(t, err)
	asst, err = anthTC.ReplyAsMessages(reply) // the first copy was overwritten above
	require.NoError(t, err)
	next, err = anthTC.ReplaceMessages(next, 3, asst)
	require.NoError(t, err)
	next, err = anthTC.PrependToolResults(next, 3, []conv.ToolResult{{CallID: "toolu_01Y", Content: "denied", IsError: true}})
	require.NoError(t, err)
	req, err = codecFor(Anthropic).ParseRequest(next)
	require.NoError(t, err)
	require.Len(t, req.Messages[3].Blocks, 4)
	require.Equal(t, []string{"toolu_01Y", "toolu_01X"},
		[]string{req.Messages[4].Blocks[0].ToolCallID, req.Messages[4].Blocks[1].ToolCallID})
}

func FuzzAnthropicTurn(f *testing.F) {
	agSeedTurn(f, Anthropic, []string{
		anBody(anU0, anA1, anU2), anBody(anA1, `{"role":"user","content":""}`), anBody(anA1), `{"messages":[]}`, `{}`,
		"{\n \"messages\" : [ " + anA1 + " ,\n " + anA3 + " ]\n}", anBody(anA1, `{"role":"user","content":null}`),
	}, []string{
		anReply(`"tool_use"`, anTH, anTA, anC0, anTB, anC1, anC2), anReply("", anC0), `{"content":[]}`, `{"content":"x"}`,
		"{ \"content\" : [\n {\"type\":\"tool_use\",\"id\":\"a\"} ,\n {\"type\":\"text\",\"text\":\"q\"}\n ] }",
	})
	f.Fuzz(func(t *testing.T, body, reply []byte, pos uint8, text string, rm, mv uint8) {
		agFuzzTurn(t, Anthropic, body, reply, pos, text, rm, mv)
	})
}

// round is one round of longConversation (conversationRounds).
func (anthropicCodec) round(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","content":"step %d"}`, i),
		fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Read","input":{"n":%d}}]}`, id, i),
		fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"r%d"}]}`, id, i)}
}
