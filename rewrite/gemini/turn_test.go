package gemini

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

var gemTC = apitest.CodecFor(Descriptor)

// Contents of the Gemini test conversation.
const (
	gmU0 = `{"role":"user","parts":[{"text":"hi"}]}`
	gmM1 = `{"role":"model","parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"SIG"}]}`
	gmU2 = `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"x":1}}}]}`
	gmM3 = `{"role":"model","parts":[{"text":"done"}]}`
	gmTR = `{"functionResponse":{"id":"s1","name":"create_new_topic","response":{"content":"ok"}}},` +
		`{"functionResponse":{"id":"s2","name":"rm","response":{"error":"blocked"}}}`
)

// gmBody builds a request body holding contents.
func gmBody(contents ...string) string {
	return `{"contents":[` + strings.Join(contents, ",") + `],"generationConfig":{"maxOutputTokens":5}}`
}

func TestGeminiPrependToolResults(t *testing.T) {
	pre := func(pos int, results []conv.ToolResult) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.PrependToolResults(b, pos, results) }
	}
	apitest.RunCases(t, []apitest.Case{
		{Name: "before existing responses", Body: gmBody(gmU0, gmM1, gmU2), Run: pre(1, apitest.Results),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[`+gmTR+`,{"functionResponse":{"name":"f","response":{"x":1}}}]}`)},
		{Name: "next without role", Body: gmBody(gmM1, `{"parts":[ {"text":"q"} ]}`), Run: pre(0, apitest.Results),
			Want: gmBody(gmM1, `{"parts":[`+gmTR+`, {"text":"q"} ]}`)},
		{Name: "next function role", Body: gmBody(gmM1, `{"role":"function","parts":[]}`), Run: pre(0, apitest.Results),
			Want: gmBody(gmM1, `{"role":"function","parts":[`+gmTR+`]}`)},
		{Name: "next parts null", Body: gmBody(gmM1, `{"role":"user","parts":null}`), Run: pre(0, apitest.Results),
			Want: gmBody(gmM1, `{"role":"user","parts":[`+gmTR+`]}`)},
		{Name: "next parts missing", Body: gmBody(gmM1, `{"role":"user"}`), Run: pre(0, apitest.Results),
			Want: gmBody(gmM1, `{"role":"user","parts":[`+gmTR+`]}`)},
		{Name: "no next content", Body: gmBody(gmU0, gmM1), Run: pre(1, []conv.ToolResult{{Name: "f", Content: "x \"y\""}}),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"content":"x \"y\""}}}]}`)},
		{Name: "next is model", Body: gmBody(gmU0, gmM1, gmM3), Run: pre(1, apitest.Results),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[`+gmTR+`]}`, gmM3)},
		{Name: "no results", Body: gmBody(gmM1), Run: pre(0, nil), Want: gmBody(gmM1)},
		{Name: "not model", Body: gmBody(gmU0, gmM1), Run: pre(0, apitest.Results), Err: `does not have role "model"`},
		{Name: "out of range", Body: gmBody(gmU0, gmM1), Run: pre(2, apitest.Results), Err: "out of range"},
		{Name: "bad parts", Body: gmBody(gmM1, `{"role":"user","parts":{}}`), Run: pre(0, apitest.Results), Err: "contents[1].parts"},
		{Name: "no name", Body: gmBody(gmM1), Run: pre(0, []conv.ToolResult{{CallID: "x"}}), Err: "no tool name"},
		{Name: "no contents", Body: `{"contents":null}`, Run: pre(0, apitest.Results), Err: "contents must be an array"},
	})
}

func TestGeminiAppendUserTextAt(t *testing.T) {
	at := func(pos int, texts ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.AppendUserTextAt(b, pos, texts) }
	}
	apitest.RunCases(t, []apitest.Case{
		{Name: "user", Body: gmBody(gmU0, gmM1, gmU2), Run: at(0, "note", "b\n"),
			Want: gmBody(`{"role":"user","parts":[{"text":"hi"},{"text":"note"},{"text":"b\n"}]}`, gmM1, gmU2)},
		{Name: "after responses", Body: gmBody(gmU0, gmM1, gmU2), Run: at(2, "note"),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"x":1}}},{"text":"note"}]}`)},
		{Name: "no role", Body: gmBody(`{"parts":null}`), Run: at(0, "note"), Want: gmBody(`{"parts":[{"text":"note"}]}`)},
		{Name: "no texts", Body: gmBody(gmU0), Run: at(0), Want: gmBody(gmU0)},
		{Name: "function role", Body: gmBody(`{"role":"function","parts":[]}`), Run: at(0, "x"), Want: gmBody(`{"role":"function","parts":[{"text":"x"}]}`)},
		{Name: "model", Body: gmBody(gmU0, gmM1), Run: at(1, "x"), Err: `is a model content`},
		{Name: "out of range", Body: gmBody(gmU0), Run: at(-1, "x"), Err: "out of range"},
		{Name: "not an object", Body: `{"contents":[1]}`, Run: at(0, "x"), Err: "contents[0] must be an object"},
	})
}

func TestGeminiReplaceAndAppendMessages(t *testing.T) {
	rep := func(pos int, items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.ReplaceMessages(b, pos, apitest.Items(items...)) }
	}
	app := func(items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.AppendMessages(b, apitest.Items(items...)) }
	}
	apitest.RunCases(t, []apitest.Case{
		{Name: "replace", Body: gmBody(gmU0, gmM1, gmU2), Run: rep(1, gmM3, gmU0), Want: gmBody(gmU0, gmM3, gmU0, gmU2)},
		{Name: "remove", Body: gmBody(gmU0, gmM1, gmU2), Run: rep(1), Want: gmBody(gmU0, gmU2)},
		{Name: "remove last", Body: gmBody(gmU0, gmM1), Run: rep(1), Want: gmBody(gmU0)},
		{Name: "out of range", Body: gmBody(gmU0), Run: rep(1), Err: "out of range"},
		{Name: "append", Body: gmBody(gmU0), Run: app(gmM1, gmU2), Want: gmBody(gmU0, gmM1, gmU2)},
		{Name: "append to missing", Body: `{"generationConfig":{}}`, Run: app(gmU0), Want: `{"generationConfig":{},"contents":[` + gmU0 + `]}`},
		{Name: "append nothing", Body: gmBody(gmU0), Run: app(), Want: gmBody(gmU0)},
		{Name: "append bad item", Body: gmBody(gmU0), Run: app(`{"role":"user",}`), Err: "not valid JSON"},
	})
}

func TestGeminiReplyAsMessagesAndToolResults(t *testing.T) {
	reply := []byte(`{"candidates":[{"content":{"parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"SIG"}]},"finishReason":"STOP"}]}`)
	items, err := gemTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	apitest.Scribble(reply)
	require.Equal(t, []string{`{"role":"model","parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"SIG"}]}`}, apitest.Strings(items))

	fx := apitest.Fixture(t, Descriptor, "reply.json")
	items, err = gemTC.ReplyAsMessages(fx)
	require.NoError(t, err)
	require.Equal(t, `{"role":"model","parts":`+gjson.GetBytes(fx, "candidates.0.content.parts").Raw+`}`, string(items[0]))

	for _, bad := range []string{`{"candidates":[]}`, `{"candidates":[{"content":{"parts":{}}}]}`, `{}`, `[`, `"x"`} {
		_, err := gemTC.ReplyAsMessages([]byte(bad))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}

	items, err = gemTC.ToolResultMessages(append(apitest.Results, conv.ToolResult{Name: "n\"", Content: "a\\b\n\x02é"}))
	require.NoError(t, err)
	require.Equal(t, []string{`{"role":"user","parts":[` + gmTR + `,{"functionResponse":{"name":"n\"","response":{"content":"a\\b\n\u0002é"}}}]}`}, apitest.Strings(items))
	var decoded struct {
		Parts []struct {
			FunctionResponse struct {
				ID       string            `json:"id"`
				Name     string            `json:"name"`
				Response map[string]string `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	}
	require.NoError(t, json.Unmarshal(items[0], &decoded))
	require.Equal(t, "a\\b\n\x02é", decoded.Parts[2].FunctionResponse.Response["content"])
	require.Equal(t, map[string]string{"error": "blocked"}, decoded.Parts[1].FunctionResponse.Response)
	require.Equal(t, "s1", decoded.Parts[0].FunctionResponse.ID)

	items, err = gemTC.ToolResultMessages(nil)
	require.NoError(t, err)
	require.Empty(t, items)
}

// Parts of the Gemini test reply.
const (
	gmTT = `{"text":"t","thought":true}`
	gmTA = `{"text":"A"}`
	gmF0 = `{"functionCall":{"name":"a","args":{"k":1}},"thoughtSignature":"SIG0"}`
	gmTB = `{"text":"B"}`
	gmF1 = `{"functionCall":{"id":"c1","name":"b","args":{}}}`
	gmF2 = `{"function_call":{"name":"c","args":{}}}`
)

// gmReply builds a reply whose first candidate holds parts.
func gmReply(parts ...string) string {
	return `{"candidates":[{"content":{"role":"model","parts":[` + strings.Join(parts, ",") +
		`]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},` +
		`"modelVersion":"g","responseId":"r1"}`
}

func TestGeminiEditReply(t *testing.T) {
	edit := func(remove, first []int) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.EditReply(b, remove, first) }
	}
	full := gmReply(gmTT, gmTA, gmF0, gmTB, gmF1, gmF2)
	apitest.RunCases(t, []apitest.Case{
		{Name: "nothing", Body: full, Run: edit(nil, nil), Want: full},
		{Name: "remove signed call", Body: full, Run: edit([]int{0}, nil), Want: gmReply(gmTT, gmTA, gmTB, gmF1, gmF2)},
		{Name: "move last first", Body: full, Run: edit(nil, []int{2}), Want: gmReply(gmTT, gmTA, gmF2, gmF0, gmTB, gmF1)},
		{Name: "remove and move", Body: full, Run: edit([]int{1}, []int{2, 0}), Want: gmReply(gmTT, gmTA, gmF2, gmF0, gmTB)},
		{Name: "remove all keeps STOP", Body: full, Run: edit([]int{0, 1, 2}, nil), Want: gmReply(gmTT, gmTA, gmTB)},
		{Name: "out of range", Body: full, Run: edit(nil, []int{3}), Err: "out of range"},
		{Name: "no parts", Body: `{"candidates":[{"finishReason":"SAFETY"}]}`, Run: edit([]int{0}, nil), Err: "parts must be an array"},
	})

	out, err := gemTC.EditReply([]byte(full), []int{1}, []int{2})
	require.NoError(t, err)
	r, err := apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, []conv.ToolCall{
		{Index: 0, Name: "c", Args: []byte(`{}`)},
		{Index: 1, Name: "a", Args: []byte(`{"k":1}`)},
	}, r.ToolCalls)
	require.Equal(t, "AB", r.Text)
	require.Equal(t, conv.StopToolUse, r.Stop)

	// The fixture's only call goes; its layout stays.
	fx := apitest.Fixture(t, Descriptor, "reply.json")
	out, err = gemTC.EditReply(fx, []int{0}, nil)
	require.NoError(t, err)
	require.Equal(t, strings.Replace(string(fx), ",\n      {\"functionCall\": {\"name\": \"read_file\", \"args\": {\"path\": \"main.go\"}}, \"thoughtSignature\": \"CiQB...\"}", "", 1), string(out))
	r, err = apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Empty(t, r.ToolCalls)
	require.Equal(t, conv.StopEnd, r.Stop)
}

func TestGeminiMergeReplies(t *testing.T) {
	first := `{"candidates":[{"content":{"role":"model","parts":[` + gmTT + `,` + gmTA + `]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":18},"modelVersion":"g","responseId":"r1"}`
	next := `{"candidates":[{"content":{"role":"model","parts":[{"text":" more"}, ` + gmF1 + `]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":7,"thoughtsTokenCount":2,"totalTokenCount":49},"modelVersion":"g2","responseId":"r2"}`
	merge := func(next string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) {
			nb := []byte(next)
			out, err := gemTC.MergeReplies(b, nb)
			if err == nil {
				kept := string(out)
				apitest.Scribble(nb)
				require.Equal(t, kept, string(out), "output aliases next")
			}
			return out, err
		}
	}
	apitest.RunCases(t, []apitest.Case{
		{Name: "merge", Body: first, Run: merge(next),
			Want: `{"candidates":[{"content":{"role":"model","parts":[` + gmTT + `,` + gmTA + `,{"text":" more"}, ` + gmF1 + `]},"finishReason":"STOP","index":0}],` +
				`"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":12,"thoughtsTokenCount":5,"totalTokenCount":57},"modelVersion":"g","responseId":"r1"}`},
		{Name: "blocked next", Body: first, Run: merge(`{"candidates":[{"finishReason":"SAFETY"}],"usageMetadata":{"promptTokenCount":40,"toolUsePromptTokenCount":4}}`),
			Want: strings.Replace(strings.Replace(first, `"STOP"`, `"SAFETY"`, 1),
				`{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":18}`,
				`{"promptTokenCount":40,"toolUsePromptTokenCount":4,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":52}`, 1)},
		{Name: "first without finishReason", Body: `{"candidates":[{"content":{"parts":[]}}]}`,
			Run:  merge(`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finish_reason":"MAX_TOKENS"}]}`),
			Want: `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS"}]}`},
		{Name: "next without usage", Body: first, Run: merge(`{"candidates":[{"content":{"parts":[]}}]}`), Want: first},
		{Name: "first without parts", Body: `{"candidates":[]}`, Run: merge(next), Err: "first reply"},
		{Name: "next parts object", Body: first, Run: merge(`{"candidates":[{"content":{"parts":{}}}]}`), Err: "next reply"},
	})

	out, err := gemTC.MergeReplies([]byte(first), []byte(next))
	require.NoError(t, err)
	r, err := apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "A more", r.Text)
	require.Equal(t, conv.Usage{InputTokens: 40, OutputTokens: 17}, r.Usage)
	require.Equal(t, "g", r.Model)
	require.Equal(t, []conv.ToolCall{{ID: "c1", Name: "b", Args: []byte(`{}`)}}, r.ToolCalls)

	fx := apitest.Fixture(t, Descriptor, "reply.json")
	out, err = gemTC.MergeReplies(fx, fx)
	require.NoError(t, err)
	require.True(t, gjson.ValidBytes(out))
	r, err = apitest.CodecFor(Descriptor).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "Reading it.Reading it.", r.Text)
	require.Len(t, r.ToolCalls, 2)
	require.Equal(t, conv.Usage{InputTokens: 90, OutputTokens: 84}, r.Usage)
	require.Equal(t, int64(90+24+60), gjson.GetBytes(out, "usageMetadata.totalTokenCount").Int())
}

// TestGeminiTurnRoundTrip appends a reply and shepherd's results to a
// conversation, as the turn engine does before a follow-up request.
func TestGeminiTurnRoundTrip(t *testing.T) {
	body := apitest.Fixture(t, Descriptor, "request.json")
	reply := apitest.Fixture(t, Descriptor, "reply.json")
	model, err := gemTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	results, err := gemTC.ToolResultMessages([]conv.ToolResult{{Name: "read_file", Content: "package main"}})
	require.NoError(t, err)
	out, err := gemTC.AppendMessages(body, append(model, results...))
	require.NoError(t, err)
	require.True(t, apitest.IsSubsequence(body, out))
	req, err := apitest.CodecFor(Descriptor).ParseRequest(out)
	require.NoError(t, err)
	req.Messages = apitest.StripDigests(t, req.Messages)
	n := len(req.Messages)
	require.Equal(t, 5, n)
	require.Equal(t, conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		{Kind: conv.BlockThinking, Text: "Need the file."},
		{Kind: conv.BlockText, Text: "Reading it."},
		{Kind: conv.BlockToolCall, ToolName: "read_file", Args: []byte(`{"path": "main.go"}`)},
	}}, req.Messages[n-2])
	require.Equal(t, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		{Kind: conv.BlockToolResult, ToolName: "read_file", Text: `{"content":"package main"}`},
	}}, req.Messages[n-1])
	// The model content holds the candidate's parts, signature included.
	require.Equal(t, gjson.GetBytes(reply, "candidates.0.content.parts").Raw, gjson.GetBytes(out, "contents.3.parts").Raw)
	require.Equal(t, "CiQB...", gjson.GetBytes(out, "contents.3.parts.2.thoughtSignature").Str)
}

func FuzzGeminiTurn(f *testing.F) {
	apitest.SeedTurn(f, Descriptor, []string{
		gmBody(gmU0, gmM1, gmU2), gmBody(gmM1, `{"parts":null}`), gmBody(gmM1), `{"contents":[]}`, `{}`,
		"{\n \"contents\" : [ " + gmM1 + " ,\n " + gmM3 + " ]\n}", gmBody(gmM1, `{"role":"function"}`),
	}, []string{
		gmReply(gmTT, gmTA, gmF0, gmTB, gmF1, gmF2), gmReply(gmF0), `{"candidates":[{"content":{"parts":[]}}]}`,
		`{"candidates":[{"finishReason":"SAFETY"}]}`,
		"{ \"candidates\" : [ { \"content\" : { \"parts\" : [\n {\"functionCall\":{}} ,\n {\"text\":\"q\"}\n ] } } ] }",
	})
	f.Fuzz(func(t *testing.T, body, reply []byte, pos uint8, text string, rm, mv uint8) {
		apitest.FuzzTurn(t, Descriptor, body, reply, pos, text, rm, mv)
	})
}
