package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// TestAnchorsSurviveClientRewrites: each pair is one conversation as the
// API produced it and as a real client sends it back. The anchors of every
// message must match, or the ledger would not be replayed (refused calls
// vanish from the model's history). The last case of each API is a real
// change, which must change the anchor.
func TestAnchorsSurviveClientRewrites(t *testing.T) {
	cases := []struct {
		name          string
		api           *Descriptor
		model, client string
		edited        string // a real edit of the model's turn
	}{
		{
			name: "anthropic claude code", api: Anthropic,
			model: `{"model":"m","max_tokens":9,"messages":[
				{"role":"user","content":[{"type":"text","text":"fix it","cache_control":{"type":"ephemeral"}}]},
				{"role":"assistant","content":[{"type":"thinking","thinking":"look","signature":"c2ln"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go","limit":5}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a"}]}]}`,
			// cache_control moved onto the newest turn, the first turn as a
			// string, input re-serialised, thinking's signature normalised.
			client: `{"model":"m","max_tokens":9,"messages":[
				{"role":"user","content":"fix it"},
				{"content":[{"signature":"","thinking":"look","type":"thinking"},{"text":"Reading.","type":"text"},{"input":{"limit":5.0,"path":"a.go"},"name":"Read","id":"toolu_1","type":"tool_use"}],"role":"assistant"},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"package a"}],"cache_control":{"type":"ephemeral"}}]}]}`,
			edited: `{"model":"m","max_tokens":9,"messages":[
				{"role":"user","content":"fix it"},
				{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"b.go","limit":5}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a"}]}]}`,
		},
		{
			name: "openai chat sdk", api: OpenAIChat,
			model: `{"model":"m","messages":[{"role":"system","content":"be terse"},
				{"role":"user","content":"fix it"},
				{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{\"path\":\"a.go\",\"limit\":5}"}}]},
				{"role":"tool","tool_call_id":"call_1","content":"package a"}]}`,
			client: `{"model":"m","messages":[{"role":"system","content":"be terse"},
				{"role":"user","content":[{"type":"text","text":"fix it"}]},
				{"role":"assistant","content":"","tool_calls":[{"type":"function","id":"call_1","function":{"arguments":"{\"limit\": 5, \"path\": \"a.go\"}","name":"Read"}}]},
				{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"package a"}]}]}`,
			edited: `{"model":"m","messages":[{"role":"system","content":"be terse"},
				{"role":"user","content":"fix it"},
				{"role":"assistant","content":"Reading.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{\"path\":\"a.go\",\"limit\":5}"}}]},
				{"role":"tool","tool_call_id":"call_1","content":"package a"}]}`,
		},
		{
			name: "openai responses codex", api: OpenAIResponses,
			model: `{"model":"m","input":[
				{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"look"}],"encrypted_content":"enc"},
				{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Reading.","annotations":[]}]},
				{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"Read","arguments":"{\"path\":\"a.go\"}"},
				{"type":"function_call_output","call_id":"call_1","output":"package a"}]}`,
			// Item ids and statuses dropped (store=false clients), the
			// reasoning item left out, the user turn as a plain string.
			client: `{"model":"m","input":[
				{"role":"user","content":"fix it"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading."}]},
				{"type":"function_call","call_id":"call_1","name":"Read","arguments":"{ \"path\": \"a.go\" }"},
				{"type":"function_call_output","call_id":"call_1","output":"package a"}]}`,
			edited: `{"model":"m","input":[
				{"role":"user","content":"fix it"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading!"}]},
				{"type":"function_call","call_id":"call_1","name":"Read","arguments":"{\"path\":\"a.go\"}"},
				{"type":"function_call_output","call_id":"call_1","output":"package a"}]}`,
		},
		{
			name: "gemini cli", api: Gemini,
			model: `{"contents":[
				{"role":"user","parts":[{"text":"fix it"}]},
				{"role":"model","parts":[{"text":"look","thought":true},{"text":"Reading."},{"functionCall":{"name":"Read","args":{"path":"a.go","limit":5}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"Grep","args":{"q":"x"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"output":"package a"}}},{"functionResponse":{"name":"Grep","response":{"output":"none"}}}]}]}`,
			// gemini-cli: its own call ids, thoughts stripped, a synthetic
			// signature, args re-serialised from a map.
			client: `{"contents":[
				{"role":"user","parts":[{"text":"fix it"}]},
				{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"Read_1764090000000_0","name":"Read","args":{"limit":5,"path":"a.go"}},"thoughtSignature":"skip_thought_signature_validator"},{"functionCall":{"id":"Grep_1764090000000_1","name":"Grep","args":{"q":"x"}},"thoughtSignature":"c2ln"}]},
				{"role":"user","parts":[{"functionResponse":{"id":"Read_1764090000000_0","name":"Read","response":{"output":"package a"}}},{"functionResponse":{"id":"Grep_1764090000000_1","name":"Grep","response":{"output":"none"}}}]}]}`,
			edited: `{"contents":[
				{"role":"user","parts":[{"text":"fix it"}]},
				{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"name":"Grep","args":{"q":"x"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"Grep","response":{"output":"none"}}}]}]}`,
		},
	}
	anchors := func(t *testing.T, api *Descriptor, body string) []string {
		t.Helper()
		v, err := codecFor(api).ParseRequest([]byte(body))
		require.NoError(t, err)
		return conv.Anchors(v.Messages)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := anchors(t, c.api, c.model)
			require.Equal(t, want, anchors(t, c.api, c.client))
			edited := anchors(t, c.api, c.edited)
			require.Equal(t, want[0], edited[0], "the first turn is the same")
			require.NotEqual(t, want[len(want)-1], edited[len(edited)-1], "an edited turn is another anchor")
		})
	}
}
