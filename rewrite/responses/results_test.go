package responses

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func rsReplace(edits ...conv.ResultEdit) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return responsesCodec{}.ReplaceToolResults(b, edits) }
}

func rsBody(items ...string) string {
	return `{"model":"m","input":[` + strings.Join(items, ",") + `]}`
}

func TestResponsesReplaceToolResults(t *testing.T) {
	const (
		user = `{"role":"user","content":"q"}`
		rs   = `{"type":"reasoning","id":"rs_1","summary":[]}`
		fa   = `{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}`
		cp   = `{"type":"custom_tool_call","call_id":"p","name":"apply_patch","input":"x"}`
		oa   = `{"type":"function_call_output","call_id":"a","output":"long"}`
		op   = `{"type":"custom_tool_call_output","call_id":"p","output":[{"type":"input_text","text":"patched"}],"id":"x"}`
	)
	fixture := string(apitest.Fixture(t, Descriptor, "request.json"))
	apitest.RunCases(t, []apitest.Case{
		// View: 0 user, 1 assistant (rs, fa, cp), 2 oa, 3 op.
		{Name: "after a merged assistant message", Body: rsBody(user, rs, fa, cp, oa, op),
			Run:  rsReplace(conv.ResultEdit{Msg: 3, Text: "P"}, conv.ResultEdit{Msg: 2, Text: "A\t"}),
			Want: rsBody(user, rs, fa, cp, `{"type":"function_call_output","call_id":"a","output":"A\t"}`, `{"type":"custom_tool_call_output","call_id":"p","output":"P","id":"x"}`)},
		{Name: "no output member", Body: rsBody(user, fa, `{"type":"function_call_output","call_id":"a"}`),
			Run: rsReplace(conv.ResultEdit{Msg: 2, Text: "x"}), Want: rsBody(user, fa, `{"type":"function_call_output","call_id":"a","output":"x"}`)},
		{Name: "fixture", Body: fixture, Run: rsReplace(conv.ResultEdit{Msg: 3, Text: "elided"}),
			Want: strings.Replace(fixture, `"output": "package main\n"`, `"output": "elided"`, 1)},
		{Name: "the assistant message", Body: rsBody(user, rs, fa, oa), Run: rsReplace(conv.ResultEdit{Msg: 1, Text: "x"}), Err: "not a tool result"},
		{Name: "another output item", Body: rsBody(user, `{"type":"computer_call","call_id":"c"}`, `{"type":"computer_call_output","call_id":"c","output":{}}`),
			Run: rsReplace(conv.ResultEdit{Msg: 2, Text: "x"}), Err: "not a tool result"},
		{Name: "block 1", Body: rsBody(user, fa, oa), Run: rsReplace(conv.ResultEdit{Msg: 2, Block: 1, Text: "x"}), Err: "one block"},
		{Name: "string input", Body: `{"input":"q"}`, Run: rsReplace(conv.ResultEdit{Msg: 0, Text: "x"}), Err: "string input"},
		{Name: "out of range", Body: rsBody(user, fa, oa), Run: rsReplace(conv.ResultEdit{Msg: 3, Text: "x"}), Err: "out of range"},
	})
}
