package gemini

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

func gmReplace(edits ...conv.ResultEdit) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return geminiCodec{}.ReplaceToolResults(b, edits) }
}

func TestGeminiReplaceToolResults(t *testing.T) {
	fixture := string(apitest.Fixture(t, Descriptor, "request.json"))
	apitest.RunCases(t, []apitest.Case{
		{Name: "response becomes content", Body: gmBody(gmU0, gmM1, gmU2), Run: gmReplace(conv.ResultEdit{Msg: 2, Text: `a "b"`}),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"content":"a \"b\""}}}]}`)},
		{Name: "id, name and other members kept, second part", Body: gmBody(gmU0, gmM1,
			`{"role":"user","parts":[{"text":"see"},{"functionResponse":{"id":"i","name":"f","response":{"error":"big"},"willContinue":false},"thoughtSignature":"S"}]}`),
			Run:  gmReplace(conv.ResultEdit{Msg: 2, Block: 1, Text: "x"}),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"text":"see"},{"functionResponse":{"id":"i","name":"f","response":{"content":"x"},"willContinue":false},"thoughtSignature":"S"}]}`)},
		{Name: "snake case, no response", Body: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"function_response":{"name":"f"}}]}`),
			Run:  gmReplace(conv.ResultEdit{Msg: 2, Text: "x"}),
			Want: gmBody(gmU0, gmM1, `{"role":"user","parts":[{"function_response":{"name":"f","response":{"content":"x"}}}]}`)},
		{Name: "fixture", Body: fixture, Run: gmReplace(conv.ResultEdit{Msg: 2, Text: "elided"}),
			Want: strings.Replace(fixture, `"response": {"temp_c": 18}`, `"response": {"content":"elided"}`, 1)},
		{Name: "a functionCall", Body: gmBody(gmU0, gmM1, gmU2), Run: gmReplace(conv.ResultEdit{Msg: 1, Block: 1, Text: "x"}), Err: "not a tool result"},
		{Name: "a text part", Body: gmBody(gmU0, gmM1, gmU2), Run: gmReplace(conv.ResultEdit{Msg: 0, Text: "x"}), Err: "not a tool result"},
		{Name: "out of range", Body: gmBody(gmU0), Run: gmReplace(conv.ResultEdit{Msg: 1, Text: "x"}), Err: "out of range"},
	})
}
