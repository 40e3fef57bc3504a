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

var gemTC = codecFor(Gemini)

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
	agRunCases(t, []agCase{
		{name: "before existing responses", body: gmBody(gmU0, gmM1, gmU2), run: pre(1, agResults),
			want: gmBody(gmU0, gmM1, `{"role":"user","parts":[`+gmTR+`,{"functionResponse":{"name":"f","response":{"x":1}}}]}`)},
		{name: "next without role", body: gmBody(gmM1, `{"parts":[ {"text":"q"} ]}`), run: pre(0, agResults),
			want: gmBody(gmM1, `{"parts":[`+gmTR+`, {"text":"q"} ]}`)},
		{name: "next function role", body: gmBody(gmM1, `{"role":"function","parts":[]}`), run: pre(0, agResults),
			want: gmBody(gmM1, `{"role":"function","parts":[`+gmTR+`]}`)},
		{name: "next parts null", body: gmBody(gmM1, `{"role":"user","parts":null}`), run: pre(0, agResults),
			want: gmBody(gmM1, `{"role":"user","parts":[`+gmTR+`]}`)},
		{name: "next parts missing", body: gmBody(gmM1, `{"role":"user"}`), run: pre(0, agResults),
			want: gmBody(gmM1, `{"role":"user","parts":[`+gmTR+`]}`)},
		{name: "no next content", body: gmBody(gmU0, gmM1), run: pre(1, []conv.ToolResult{{Name: "f", Content: "x \"y\""}}),
			want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"content":"x \"y\""}}}]}`)},
		{name: "next is model", body: gmBody(gmU0, gmM1, gmM3), run: pre(1, agResults),
			want: gmBody(gmU0, gmM1, `{"role":"user","parts":[`+gmTR+`]}`, gmM3)},
		{name: "no results", body: gmBody(gmM1), run: pre(0, nil), want: gmBody(gmM1)},
		{name: "not model", body: gmBody(gmU0, gmM1), run: pre(0, agResults), err: `does not have role "model"`},
		{name: "out of range", body: gmBody(gmU0, gmM1), run: pre(2, agResults), err: "out of range"},
		{name: "bad parts", body: gmBody(gmM1, `{"role":"user","parts":{}}`), run: pre(0, agResults), err: "contents[1].parts"},
		{name: "no name", body: gmBody(gmM1), run: pre(0, []conv.ToolResult{{CallID: "x"}}), err: "no tool name"},
		{name: "no contents", body: `{"contents":null}`, run: pre(0, agResults), err: "contents must be an array"},
	})
}

func TestGeminiAppendUserTextAt(t *testing.T) {
	at := func(pos int, texts ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.AppendUserTextAt(b, pos, texts) }
	}
	agRunCases(t, []agCase{
		{name: "user", body: gmBody(gmU0, gmM1, gmU2), run: at(0, "note", "b\n"),
			want: gmBody(`{"role":"user","parts":[{"text":"hi"},{"text":"note"},{"text":"b\n"}]}`, gmM1, gmU2)},
		{name: "after responses", body: gmBody(gmU0, gmM1, gmU2), run: at(2, "note"),
			want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"x":1}}},{"text":"note"}]}`)},
		{name: "no role", body: gmBody(`{"parts":null}`), run: at(0, "note"), want: gmBody(`{"parts":[{"text":"note"}]}`)},
		{name: "no texts", body: gmBody(gmU0), run: at(0), want: gmBody(gmU0)},
		{name: "function role", body: gmBody(`{"role":"function","parts":[]}`), run: at(0, "x"), want: gmBody(`{"role":"function","parts":[{"text":"x"}]}`)},
		{name: "model", body: gmBody(gmU0, gmM1), run: at(1, "x"), err: `is a model content`},
		{name: "out of range", body: gmBody(gmU0), run: at(-1, "x"), err: "out of range"},
		{name: "not an object", body: `{"contents":[1]}`, run: at(0, "x"), err: "contents[0] must be an object"},
	})
}

func TestGeminiReplaceAndAppendMessages(t *testing.T) {
	rep := func(pos int, items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.ReplaceMessages(b, pos, agItems(items...)) }
	}
	app := func(items ...string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return gemTC.AppendMessages(b, agItems(items...)) }
	}
	agRunCases(t, []agCase{
		{name: "replace", body: gmBody(gmU0, gmM1, gmU2), run: rep(1, gmM3, gmU0), want: gmBody(gmU0, gmM3, gmU0, gmU2)},
		{name: "remove", body: gmBody(gmU0, gmM1, gmU2), run: rep(1), want: gmBody(gmU0, gmU2)},
		{name: "remove last", body: gmBody(gmU0, gmM1), run: rep(1), want: gmBody(gmU0)},
		{name: "out of range", body: gmBody(gmU0), run: rep(1), err: "out of range"},
		{name: "append", body: gmBody(gmU0), run: app(gmM1, gmU2), want: gmBody(gmU0, gmM1, gmU2)},
		{name: "append to missing", body: `{"generationConfig":{}}`, run: app(gmU0), want: `{"generationConfig":{},"contents":[` + gmU0 + `]}`},
		{name: "append nothing", body: gmBody(gmU0), run: app(), want: gmBody(gmU0)},
		{name: "append bad item", body: gmBody(gmU0), run: app(`{"role":"user",}`), err: "not valid JSON"},
	})
}

func TestGeminiReplyAsMessagesAndToolResults(t *testing.T) {
	reply := []byte(`{"candidates":[{"content":{"parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"SIG"}]},"finishReason":"STOP"}]}`)
	items, err := gemTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	scribble(reply)
	require.Equal(t, []string{`{"role":"model","parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"SIG"}]}`}, agStrings(items))

	fx := fixture(t, Gemini, "reply.json")
	items, err = gemTC.ReplyAsMessages(fx)
	require.NoError(t, err)
	require.Equal(t, `{"role":"model","parts":`+gjson.GetBytes(fx, "candidates.0.content.parts").Raw+`}`, string(items[0]))

	for _, bad := range []string{`{"candidates":[]}`, `{"candidates":[{"content":{"parts":{}}}]}`, `{}`, `[`, `"x"`} {
		_, err := gemTC.ReplyAsMessages([]byte(bad))
		require.ErrorIs(t, err, ErrMalformedReply, bad)
	}

	items, err = gemTC.ToolResultMessages(append(agResults, conv.ToolResult{Name: "n\"", Content: "a\\b\n\x02é"}))
	require.NoError(t, err)
	require.Equal(t, []string{`{"role":"user","parts":[` + gmTR + `,{"functionResponse":{"name":"n\"","response":{"content":"a\\b\n\u0002é"}}}]}`}, agStrings(items))
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
	agRunCases(t, []agCase{
		{name: "nothing", body: full, run: edit(nil, nil), want: full},
		{name: "remove signed call", body: full, run: edit([]int{0}, nil), want: gmReply(gmTT, gmTA, gmTB, gmF1, gmF2)},
		{name: "move last first", body: full, run: edit(nil, []int{2}), want: gmReply(gmTT, gmTA, gmF2, gmF0, gmTB, gmF1)},
		{name: "remove and move", body: full, run: edit([]int{1}, []int{2, 0}), want: gmReply(gmTT, gmTA, gmF2, gmF0, gmTB)},
		{name: "remove all keeps STOP", body: full, run: edit([]int{0, 1, 2}, nil), want: gmReply(gmTT, gmTA, gmTB)},
		{name: "out of range", body: full, run: edit(nil, []int{3}), err: "out of range"},
		{name: "no parts", body: `{"candidates":[{"finishReason":"SAFETY"}]}`, run: edit([]int{0}, nil), err: "parts must be an array"},
	})

	out, err := gemTC.EditReply([]byte(full), []int{1}, []int{2})
	require.NoError(t, err)
	r, err := codecFor(Gemini).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, []conv.ToolCall{
		{Index: 0, Name: "c", Args: []byte(`{}`)},
		{Index: 1, Name: "a", Args: []byte(`{"k":1}`)},
	}, r.ToolCalls)
	require.Equal(t, "AB", r.Text)
	require.Equal(t, conv.StopToolUse, r.Stop)

	// The fixture's only call goes; its layout stays.
	fx := fixture(t, Gemini, "reply.json")
	out, err = gemTC.EditReply(fx, []int{0}, nil)
	require.NoError(t, err)
	require.Equal(t, strings.Replace(string(fx), ",\n      {\"functionCall\": {\"name\": \"read_file\", \"args\": {\"path\": \"main.go\"}}, \"thoughtSignature\": \"CiQB...\"}", "", 1), string(out))
	r, err = codecFor(Gemini).ParseReply(out)
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
				scribble(nb)
				require.Equal(t, kept, string(out), "output aliases next")
			}
			return out, err
		}
	}
	agRunCases(t, []agCase{
		{name: "merge", body: first, run: merge(next),
			want: `{"candidates":[{"content":{"role":"model","parts":[` + gmTT + `,` + gmTA + `,{"text":" more"}, ` + gmF1 + `]},"finishReason":"STOP","index":0}],` +
				`"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":12,"thoughtsTokenCount":5,"totalTokenCount":57},"modelVersion":"g","responseId":"r1"}`},
		{name: "blocked next", body: first, run: merge(`{"candidates":[{"finishReason":"SAFETY"}],"usageMetadata":{"promptTokenCount":40,"toolUsePromptTokenCount":4}}`),
			want: strings.Replace(strings.Replace(first, `"STOP"`, `"SAFETY"`, 1),
				`{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":18}`,
				`{"promptTokenCount":40,"toolUsePromptTokenCount":4,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":52}`, 1)},
		{name: "first without finishReason", body: `{"candidates":[{"content":{"parts":[]}}]}`,
			run:  merge(`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finish_reason":"MAX_TOKENS"}]}`),
			want: `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS"}]}`},
		{name: "next without usage", body: first, run: merge(`{"candidates":[{"content":{"parts":[]}}]}`), want: first},
		{name: "first without parts", body: `{"candidates":[]}`, run: merge(next), err: "first reply"},
		{name: "next parts object", body: first, run: merge(`{"candidates":[{"content":{"parts":{}}}]}`), err: "next reply"},
	})

	out, err := gemTC.MergeReplies([]byte(first), []byte(next))
	require.NoError(t, err)
	r, err := codecFor(Gemini).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "A more", r.Text)
	require.Equal(t, conv.Usage{InputTokens: 40, OutputTokens: 17}, r.Usage)
	require.Equal(t, "g", r.Model)
	require.Equal(t, []conv.ToolCall{{ID: "c1", Name: "b", Args: []byte(`{}`)}}, r.ToolCalls)

	fx := fixture(t, Gemini, "reply.json")
	out, err = gemTC.MergeReplies(fx, fx)
	require.NoError(t, err)
	require.True(t, gjson.ValidBytes(out))
	r, err = codecFor(Gemini).ParseReply(out)
	require.NoError(t, err)
	require.Equal(t, "Reading it.Reading it.", r.Text)
	require.Len(t, r.ToolCalls, 2)
	require.Equal(t, conv.Usage{InputTokens: 90, OutputTokens: 84}, r.Usage)
	require.Equal(t, int64(90+24+60), gjson.GetBytes(out, "usageMetadata.totalTokenCount").Int())
}

// TestGeminiTurnRoundTrip appends a reply and shepherd's results to a
// conversation, as the turn engine does before a follow-up request.
func TestGeminiTurnRoundTrip(t *testing.T) {
	body := fixture(t, Gemini, "request.json")
	reply := fixture(t, Gemini, "reply.json")
	model, err := gemTC.ReplyAsMessages(reply)
	require.NoError(t, err)
	results, err := gemTC.ToolResultMessages([]conv.ToolResult{{Name: "read_file", Content: "package main"}})
	require.NoError(t, err)
	out, err := gemTC.AppendMessages(body, append(model, results...))
	require.NoError(t, err)
	require.True(t, isSubsequence(body, out))
	req, err := codecFor(Gemini).ParseRequest(out)
	require.NoError(t, err)
	req.Messages = stripDigests(t, req.Messages)
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
	agSeedTurn(f, Gemini, []string{
		gmBody(gmU0, gmM1, gmU2), gmBody(gmM1, `{"parts":null}`), gmBody(gmM1), `{"contents":[]}`, `{}`,
		"{\n \"contents\" : [ " + gmM1 + " ,\n " + gmM3 + " ]\n}", gmBody(gmM1, `{"role":"function"}`),
	}, []string{
		gmReply(gmTT, gmTA, gmF0, gmTB, gmF1, gmF2), gmReply(gmF0), `{"candidates":[{"content":{"parts":[]}}]}`,
		`{"candidates":[{"finishReason":"SAFETY"}]}`,
		"{ \"candidates\" : [ { \"content\" : { \"parts\" : [\n {\"functionCall\":{}} ,\n {\"text\":\"q\"}\n ] } } ] }",
	})
	f.Fuzz(func(t *testing.T, body, reply []byte, pos uint8, text string, rm, mv uint8) {
		agFuzzTurn(t, Gemini, body, reply, pos, text, rm, mv)
	})
}

// round is one round of longConversation (conversationRounds).
func (geminiCodec) round(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","parts":[{"text":"step %d"}]}`, i),
		fmt.Sprintf(`{"role":"model","parts":[{"functionCall":{"name":"Read","args":{"n":%d}}}]}`, i),
		fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"content":"r%d"}}}]}`, i)}
}
