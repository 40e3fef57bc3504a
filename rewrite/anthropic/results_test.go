package anthropic

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func anReplace(edits ...conv.ResultEdit) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return anthropicCodec{}.ReplaceToolResults(b, edits) }
}

func TestAnthropicReplaceToolResults(t *testing.T) {
	fixture := string(apitest.Fixture(t, Descriptor, "request.json"))
	apitest.RunCases(t, []apitest.Case{
		{Name: "string content", Body: anBody(anU0, anA1, anU2), Run: anReplace(conv.ResultEdit{Msg: 2, Block: 0, Text: `short "q"`}),
			Want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"short \"q\""}]}`)},
		{Name: "block content, flags and cache_control kept",
			Body: anBody(anU0, anA1, `{"role":"user","content":[{"type":"text","text":"see"},{"type":"tool_result","tool_use_id":"a","is_error":true,"content":[{"type":"text","text":"long"},{"type":"image","source":{}}],"cache_control":{"type":"ephemeral"}}]}`),
			Run:  anReplace(conv.ResultEdit{Msg: 2, Block: 1, Text: "x"}),
			Want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"text","text":"see"},{"type":"tool_result","tool_use_id":"a","is_error":true,"content":"x","cache_control":{"type":"ephemeral"}}]}`)},
		{Name: "no content member", Body: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}`),
			Run:  anReplace(conv.ResultEdit{Msg: 2, Text: "x"}),
			Want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]}`)},
		{Name: "two messages, any order",
			Body: anBody(anU0, anA1, anU2, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"rr"}, {"type":"tool_result","tool_use_id":"c","content":"s"}]}`),
			Run:  anReplace(conv.ResultEdit{Msg: 4, Block: 1, Text: "C"}, conv.ResultEdit{Msg: 2, Text: "A"}, conv.ResultEdit{Msg: 4, Text: "B"}),
			Want: anBody(anU0, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"A"}]}`, anA1, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"B"}, {"type":"tool_result","tool_use_id":"c","content":"C"}]}`)},
		{Name: "fixture, pretty", Body: fixture, Run: anReplace(conv.ResultEdit{Msg: 2, Text: "elided"}),
			Want: strings.Replace(fixture, `"content": [{"type": "text", "text": "package main"}]`, `"content": "elided"`, 1)},
		{Name: "a text block", Body: anBody(anU0, anA1, anU2), Run: anReplace(conv.ResultEdit{Msg: 0, Text: "x"}), Err: "no blocks"},
		{Name: "a tool_use block", Body: anBody(anU0, anA1, anU2), Run: anReplace(conv.ResultEdit{Msg: 1, Block: 2, Text: "x"}), Err: "not a tool result"},
		{Name: "block out of range", Body: anBody(anU0, anA1, anU2), Run: anReplace(conv.ResultEdit{Msg: 2, Block: 1, Text: "x"}), Err: "no block 1"},
		{Name: "message out of range", Body: anBody(anU0, anA1, anU2), Run: anReplace(conv.ResultEdit{Msg: 3, Text: "x"}), Err: "out of range"},
		{Name: "one bad edit changes nothing", Body: anBody(anU0, anA1, anU2),
			Run: anReplace(conv.ResultEdit{Msg: 2, Text: "x"}, conv.ResultEdit{Msg: 1, Text: "x"}), Err: "not a tool result"},
		{Name: "same block twice", Body: anBody(anU0, anA1, anU2),
			Run: anReplace(conv.ResultEdit{Msg: 2, Text: "x"}, conv.ResultEdit{Msg: 2, Text: "y"}), Err: "replaced twice"},
		{Name: "no edits", Body: anBody(anU0, anA1, anU2), Run: anReplace(), Want: anBody(anU0, anA1, anU2)},
	})
}
