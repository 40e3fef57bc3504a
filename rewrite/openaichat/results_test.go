package openaichat

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func chReplace(edits ...conv.ResultEdit) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return chatCodec{}.ReplaceToolResults(b, edits) }
}

func chBody(msgs ...string) string {
	return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestChatReplaceToolResults(t *testing.T) {
	const (
		sys  = `{"role":"system","content":"s"}`
		user = `{"role":"user","content":"q"}`
		call = `{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	)
	fixture := string(apitest.Fixture(t, Descriptor, "request.json"))
	apitest.RunCases(t, []apitest.Case{
		{Name: "string content", Body: chBody(sys, user, call, `{"role":"tool","tool_call_id":"a","content":"long"}`),
			Run:  chReplace(conv.ResultEdit{Msg: 3, Text: "é\n\"x\""}),
			Want: chBody(sys, user, call, `{"role":"tool","tool_call_id":"a","content":"é\n\"x\""}`)},
		{Name: "parts content, other members kept", Body: chBody(sys, user, call, `{"role":"tool","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_call_id":"a","name":"f"}`),
			Run:  chReplace(conv.ResultEdit{Msg: 3, Text: "x"}),
			Want: chBody(sys, user, call, `{"role":"tool","content":"x","tool_call_id":"a","name":"f"}`)},
		{Name: "no content member", Body: chBody(user, call, `{"role":"tool","tool_call_id":"a"}`),
			Run: chReplace(conv.ResultEdit{Msg: 2, Text: "x"}), Want: chBody(user, call, `{"role":"tool","tool_call_id":"a","content":"x"}`)},
		{Name: "two tool messages, any order", Body: chBody(user, call, `{"role":"tool","tool_call_id":"a","content":"1"}`, `{"role":"tool","tool_call_id":"b","content":"2"}`),
			Run:  chReplace(conv.ResultEdit{Msg: 3, Text: "B"}, conv.ResultEdit{Msg: 2, Text: "A"}),
			Want: chBody(user, call, `{"role":"tool","tool_call_id":"a","content":"A"}`, `{"role":"tool","tool_call_id":"b","content":"B"}`)},
		{Name: "fixture", Body: fixture, Run: chReplace(conv.ResultEdit{Msg: 4, Text: "elided"}),
			Want: strings.Replace(fixture, `"content": "package main\n"`, `"content": "elided"`, 1)},
		{Name: "a user message", Body: chBody(user, call), Run: chReplace(conv.ResultEdit{Msg: 0, Text: "x"}), Err: "not a tool result"},
		{Name: "a tool call", Body: chBody(user, call), Run: chReplace(conv.ResultEdit{Msg: 1, Block: 1, Text: "x"}), Err: "not a tool result"},
		{Name: "block 1 of a tool message", Body: chBody(user, call, `{"role":"tool","tool_call_id":"a","content":"1"}`),
			Run: chReplace(conv.ResultEdit{Msg: 2, Block: 1, Text: "x"}), Err: "no block 1"},
		{Name: "out of range", Body: chBody(user), Run: chReplace(conv.ResultEdit{Msg: 1, Text: "x"}), Err: "out of range"},
	})
}
