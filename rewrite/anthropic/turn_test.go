package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

var anthTC = apitest.CodecFor(Descriptor)

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

// The rendered blocks of apitest.Results.
var (
	anTR = `{"type":"tool_result","tool_use_id":"s1","content":"ok"},{"type":"tool_result","tool_use_id":"s2","content":"blocked","is_error":true}`
)

func anPrepend(pos int, results []conv.ToolResult) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return anthTC.PrependToolResults(b, pos, results) }
}

func TestAnthropicPrependToolResults(t *testing.T) {
	pretty := "{\n  \"messages\": [\n    {\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"x\"}]},\n" +
		"    {\"role\": \"user\", \"content\": [ {\"type\": \"text\", \"text\": \"y\"} ]}\n  ]\n}\n"
	apitest.RunCases(t, []apitest.Case{
		{Name: "before existing results", Body: anBody(anU0, anA1, anU2), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`,{"type":"tool_result","tool_use_id":"a","content":"r"}]}`)},
		{Name: "string content", Body: anBody(anU0, anA1, `{"role":"user","content":"go \"on\"\u00e9"}`), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`,{"type":"text","text":"go \"on\"\u00e9"}]}`)},
		{Name: "empty string content", Body: anBody(anU0, anA1, `{"role":"user","content":" "}`), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`)},
		{Name: "null content", Body: anBody(anU0, anA1, `{"role":"user","content":null}`), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`)},
		{Name: "missing content", Body: anBody(anU0, anA1, `{"role":"user"}`), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`)},
		{Name: "empty array", Body: anBody(anU0, anA1, `{"role":"user","content":[ ]}`), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+` ]}`)},
		{Name: "no next message", Body: anBody(anU0, anA1), Run: anPrepend(1, apitest.Results[:1]),
			Want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"s1","content":"ok"}]}`)},
		{Name: "next is assistant", Body: anBody(anU0, anA1, anA3), Run: anPrepend(1, apitest.Results),
			Want: anBody(anU0, anA1, `{"role":"user","content":[`+anTR+`]}`, anA3)},
		{Name: "pretty", Body: pretty, Run: anPrepend(0, apitest.Results),
			Want: strings.Replace(pretty, `"content": [ {"type": "text", "text": "y"}`, `"content": [`+anTR+`, {"type": "text", "text": "y"}`, 1)},
		{Name: "no results", Body: anBody(anU0, anA1), Run: anPrepend(1, nil), Want: anBody(anU0, anA1)},
		{Name: "not assistant", Body: anBody(anU0, anA1), Run: anPrepend(0, apitest.Results), Err: `does not have role "assistant"`},
		{Name: "past end", Body: anBody(anU0, anA1), Run: anPrepend(2, apitest.Results), Err: "out of range"},
		{Name: "negative", Body: anBody(anU0, anA1), Run: anPrepend(-1, apitest.Results), Err: "out of range"},
		{Name: "bad next content", Body: anBody(anA1, `{"role":"user","content":5}`), Run: anPrepend(0, apitest.Results), Err: "messages[1].content"},
		{Name: "no call id", Body: anBody(anA1), Run: anPrepend(0, []conv.ToolResult{{Content: "x"}}), Err: "no call id"},
		{Name: "invalid body", Body: `{"messages":[`, Run: anPrepend(0, apitest.Results), Err: "malformed"},
		{Name: "no messages", Body: `{}`, Run: anPrepend(0, apitest.Results), Err: "messages must be an array"},
	})
}

func TestAnthropicAppendUserTextAt(t *testing.T) {
	at := func(pos int, texts ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.AppendUserTextAt(b, pos, texts) }
	}
	apitest.RunCases(t, []apitest.Case{
		{Name: "string", Body: anBody(anU0, anA1, anU2), Run: at(0, "note", `a"<b>`+"\n"),
			Want: anBody(`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"note"},{"type":"text","text":"a\"<b>\n"}]}`, anA1, anU2)},
		{Name: "array after results", Body: anBody(anU0, anA1, anU2), Run: at(2, "note"),
			Want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"note"}]}`)},
		{Name: "no texts", Body: anBody(anU0), Run: at(0), Want: anBody(anU0)},
		{Name: "assistant", Body: anBody(anU0, anA1), Run: at(1, "x"), Err: `does not have role "user"`},
		{Name: "out of range", Body: anBody(anU0), Run: at(1, "x"), Err: "out of range"},
	})
}

func TestAnthropicReplaceAndAppendMessages(t *testing.T) {
	rep := func(pos int, items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.ReplaceMessages(b, pos, apitest.Items(items...)) }
	}
	app := func(items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return anthTC.AppendMessages(b, apitest.Items(items...)) }
	}
	pretty := "{\"messages\": [\n  " + anU0 + ",\n  " + anA1 + ",\n  " + anU2 + "\n]}"
	apitest.RunCases(t, []apitest.Case{
		{Name: "replace with two", Body: anBody(anU0, anA1, anU2), Run: rep(1, anA3, anU0), Want: anBody(anU0, anA3, anU0, anU2)},
		{Name: "replace with one", Body: anBody(anU0, anA1, anU2), Run: rep(2, anA3), Want: anBody(anU0, anA1, anA3)},
		{Name: "remove first", Body: anBody(anU0, anA1, anU2), Run: rep(0), Want: anBody(anA1, anU2)},
		{Name: "remove middle", Body: anBody(anU0, anA1, anU2), Run: rep(1), Want: anBody(anU0, anU2)},
		{Name: "remove last", Body: anBody(anU0, anA1, anU2), Run: rep(2), Want: anBody(anU0, anA1)},
		{Name: "remove only", Body: `{"messages":[ ` + anU0 + ` ]}`, Run: rep(0), Want: `{"messages":[  ]}`},
		{Name: "remove pretty", Body: pretty, Run: rep(1), Want: "{\"messages\": [\n  " + anU0 + ",\n  " + anU2 + "\n]}"},
		{Name: "replace out of range", Body: anBody(anU0), Run: rep(1, anA3), Err: "out of range"},
		{Name: "replace bad item", Body: anBody(anU0), Run: rep(0, `{"role":`), Err: "not valid JSON"},
		{Name: "replace scalar item", Body: anBody(anU0), Run: rep(0, `"x"`), Err: "not a JSON object"},
		{Name: "append two", Body: anBody(anU0), Run: app(anA1, anU2), Want: anBody(anU0, anA1, anU2)},
		{Name: "append to empty", Body: `{"model":"m","messages":[]}`, Run: app(anU0), Want: anBody(anU0)},
		{Name: "append to missing", Body: `{"model":"m"}`, Run: app(anU0), Want: anBody(anU0)},
		{Name: "append to null", Body: `{"model":"m","messages":null}`, Run: app(anU0), Want: anBody(anU0)},
		{Name: "append pretty", Body: pretty, Run: app(anA3), Want: "{\"messages\": [\n  " + anU0 + ",\n  " + anA1 + ",\n  " + anU2 + "," + anA3 + "\n]}"},
		{Name: "append nothing", Body: anBody(anU0), Run: app(), Want: anBody(anU0)},
		{Name: "append to object", Body: `{"messages":{}}`, Run: app(anU0), Err: "messages must be an array"},
	})
}

func TestAnthropicReplyAsMessagesAndToolResults(t *testing.T) {
	reply := []byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"S"}, {"type":"text","text":"x"}],"stop_reason":"end_turn"}`)
	items, err := anthTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	apitest.Scribble(reply)
	require.Equal(t, []string{`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"S"}, {"type":"text","text":"x"}]}`}, apitest.Strings(items))

	fx := apitest.Fixture(t, Descriptor, "reply.json")
	items, err = anthTC.ReplyAsMessages(fx)
	require.NoError(t, err)
	require.Equal(t, `{"role":"assistant","content":`+gjson.GetBytes(fx, "content").Raw+`}`, string(items[0]))

	for _, bad := range []string{`{"content":"x"}`, `{}`, `[]`, `{"content":[}`} {
		_, err := anthTC.ReplyAsMessages([]byte(bad))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}

	items, err = anthTC.ToolResultMessages(append(apitest.Results, conv.ToolResult{CallID: "s\"3", Content: "a\"b\\c\n\t<&>\u2028\x01"}))
	require.NoError(t, err)
	require.Equal(t, []string{`{"role":"user","content":[` + anTR +
		`,{"type":"tool_result","tool_use_id":"s\"3","content":"a\"b\\c\n\t<&>\u2028\u0001"}]}`}, apitest.Strings(items))
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
	apitest.RunCases(t, []apitest.Case{
		{Name: "nothing", Body: full, Run: edit(nil, nil), Want: full},
		{Name: "remove middle", Body: full, Run: edit([]int{1}, nil), Want: anReply(`"tool_use"`, anTH, anTA, anC0, anTB, anC2)},
		{Name: "move last first", Body: full, Run: edit(nil, []int{2}), Want: anReply(`"tool_use"`, anTH, anTA, anC2, anC0, anTB, anC1)},
		{Name: "remove and move", Body: full, Run: edit([]int{0}, []int{2, 1}), Want: anReply(`"tool_use"`, anTH, anTA, anC2, anC1, anTB)},
		{Name: "move first in place", Body: full, Run: edit(nil, []int{0}), Want: full},
		{Name: "remove all", Body: full, Run: edit([]int{2, 0, 1}, nil), Want: anReply(`"end_turn"`, anTH, anTA, anTB)},
		{Name: "remove all null stop", Body: anReply(`null`, anC0), Run: edit([]int{0}, nil), Want: anReply(`"end_turn"`)},
		{Name: "remove all no stop", Body: anReply("", anTA, anC0), Run: edit([]int{0}, nil),
			Want: strings.TrimSuffix(anReply("", anTA), "}") + `,"stop_reason":"end_turn"}`},
		{Name: "remove all max_tokens", Body: anReply(`"max_tokens"`, anTA, anC0), Run: edit([]int{0}, nil), Want: anReply(`"max_tokens"`, anTA)},
		{Name: "out of range", Body: full, Run: edit([]int{3}, nil), Err: "out of range"},
		{Name: "no content", Body: `{"stop_reason":"tool_use"}`, Run: edit([]int{0}, nil), Err: "content must be an array"},
		{Name: "not JSON", Body: `{"content":[`, Run: edit([]int{0}, nil), Err: "malformed upstream reply"},
	})

	// The reply view of the edited reply lists the remaining calls in order.
	out, err := anthTC.EditReply([]byte(full), []int{0}, []int{2})
	require.NoError(t, err)
	r, err := apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, []conv.ToolCall{
		{Index: 0, ID: "t2", Name: "n2", Args: []byte(`{}`)},
		{Index: 1, ID: "t1", Name: "n1", Args: []byte(`{"k":1}`)},
	}, r.ToolCalls)
	require.Equal(t, "AB", r.Text)

	// The pretty-printed fixture keeps its layout and its thinking block.
	fx := apitest.Fixture(t, Descriptor, "reply.json")
	out, err = anthTC.EditReply(fx, []int{0}, nil)
	require.NoError(t, err)
	require.True(t, apitest.IsSubsequence(out, fx))
	require.Contains(t, string(out), `{"type": "thinking", "thinking": "Need the file.", "signature": "EqQB..."},`+"\n    ")
	r, err = apitest.CodecFor(Descriptor).ParseReply(out)
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
				apitest.Scribble(nb)
				require.Equal(t, kept, string(out), "output aliases next")
			}
			return out, err
		}
	}
	apitest.RunCases(t, []apitest.Case{
		{Name: "merge", Body: first, Run: merge(next),
			Want: `{"id":"msg_1","model":"c","content":[{"type":"thinking","thinking":"t","signature":"S"},{"type":"text","text":"Hello "},` +
				`{"type":"text","text":"world"}, {"type":"tool_use","id":"t","name":"read","input":{"p":1}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":130,"cache_read_input_tokens":150,"output_tokens":16,"service_tier":"standard"}}`},
		{Name: "next empty", Body: first, Run: merge(`{"content":[],"stop_reason":"max_tokens","usage":{"input_tokens":1}}`),
			Want: strings.Replace(strings.Replace(first, `"end_turn"`, `"max_tokens"`, 1),
				`{"input_tokens":100,"cache_read_input_tokens":50,"output_tokens":7}`, `{"input_tokens":1,"output_tokens":7}`, 1)},
		{Name: "next without usage", Body: first, Run: merge(`{"content":[{"type":"text","text":"!"}],"stop_sequence":"END"}`),
			Want: strings.Replace(strings.Replace(first, `"Hello "}`, `"Hello "},{"type":"text","text":"!"}`, 1), `"stop_sequence":null`, `"stop_sequence":"END"`, 1)},
		{Name: "first without usage", Body: `{"content":[]}`, Run: merge(`{"content":[{"type":"text","text":"!"}],"usage":{"output_tokens":3}}`),
			Want: `{"content":[{"type":"text","text":"!"}],"usage":{"output_tokens":3}}`},
		{Name: "first without content", Body: `{"usage":{}}`, Run: merge(next), Err: "content must be an array"},
		{Name: "next content string", Body: first, Run: merge(`{"content":"x"}`), Err: "next reply"},
		{Name: "next invalid", Body: first, Run: merge(`{`), Err: "next reply"},
	})

	out, err := anthTC.MergeReplies([]byte(first), []byte(next))
	require.NoError(t, err)
	r, err := apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "Hello world", r.Text)
	require.Equal(t, conv.Usage{InputTokens: 130, OutputTokens: 16, CacheReadTokens: 150}, r.Usage)
	require.Equal(t, "c", r.Model)
	require.Equal(t, conv.StopToolUse, r.Stop)
	require.Equal(t, []conv.ToolCall{{ID: "t", Name: "read", Args: []byte(`{"p":1}`)}}, r.ToolCalls)

	// Pretty-printed replies merge into valid JSON too.
	fx := apitest.Fixture(t, Descriptor, "reply.json")
	out, err = anthTC.MergeReplies(fx, fx)
	require.NoError(t, err)
	require.True(t, gjson.ValidBytes(out))
	r, err = apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "Reading it.Reading it.", r.Text)
	require.Len(t, r.ToolCalls, 4)
	require.Equal(t, int64(114), r.Usage.OutputTokens)
	require.Equal(t, conv.Usage{InputTokens: 812, OutputTokens: 114, CacheReadTokens: 2048, CacheWriteTokens: 100}, r.Usage)
}

// TestAnthropicTurnRoundTrip appends a reply and shepherd's results to a
// conversation, as the turn engine does before a follow-up request.
func TestAnthropicTurnRoundTrip(t *testing.T) {
	body := apitest.Fixture(t, Descriptor, "request.json")
	reply := apitest.Fixture(t, Descriptor, "reply.json")
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
	apitest.ScribbleItems(items)
	require.True(t, apitest.IsSubsequence(body, out))
	req, err := apitest.CodecFor(Descriptor).ParseRequest(out)
	require.NoError(t, err)
	req.Messages = apitest.StripDigests(t, req.Messages)
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
	req, err = apitest.CodecFor(Descriptor).ParseRequest(next)
	require.NoError(t, err)
	require.Len(t, req.Messages[3].Blocks, 4)
	require.Equal(t, []string{"toolu_01Y", "toolu_01X"},
		[]string{req.Messages[4].Blocks[0].ToolCallID, req.Messages[4].Blocks[1].ToolCallID})
}

func FuzzAnthropicTurn(f *testing.F) {
	apitest.SeedTurn(f, Descriptor, []string{
		anBody(anU0, anA1, anU2), anBody(anA1, `{"role":"user","content":""}`), anBody(anA1), `{"messages":[]}`, `{}`,
		"{\n \"messages\" : [ " + anA1 + " ,\n " + anA3 + " ]\n}", anBody(anA1, `{"role":"user","content":null}`),
	}, []string{
		anReply(`"tool_use"`, anTH, anTA, anC0, anTB, anC1, anC2), anReply("", anC0), `{"content":[]}`, `{"content":"x"}`,
		"{ \"content\" : [\n {\"type\":\"tool_use\",\"id\":\"a\"} ,\n {\"type\":\"text\",\"text\":\"q\"}\n ] }",
	})
	f.Fuzz(func(t *testing.T, body, reply []byte, pos uint8, text string, rm, mv uint8) {
		apitest.FuzzTurn(t, Descriptor, body, reply, pos, text, rm, mv)
	})
}
