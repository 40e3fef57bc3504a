package openaichat

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestAnchorsSurviveClientRewrites: one conversation as the
// API produced it and as a real client sends it back. The anchors of every
// message must match, or the ledger would not be replayed (refused calls
// vanish from the model's history). Edited is a real
// change, which must change the anchor.
func TestAnchorsSurviveClientRewrites(t *testing.T) {
	apitest.CheckAnchorsSurvive(t, Descriptor, []apitest.ClientRewrite{{
		Name: "openai chat sdk",
		Model: `{"model":"m","messages":[{"role":"system","content":"be terse"},
			{"role":"user","content":"fix it"},
			{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{\"path\":\"a.go\",\"limit\":5}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"package a"}]}`,
		Client: `{"model":"m","messages":[{"role":"system","content":"be terse"},
			{"role":"user","content":[{"type":"text","text":"fix it"}]},
			{"role":"assistant","content":"","tool_calls":[{"type":"function","id":"call_1","function":{"arguments":"{\"limit\": 5, \"path\": \"a.go\"}","name":"Read"}}]},
			{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"package a"}]}]}`,
		Edited: `{"model":"m","messages":[{"role":"system","content":"be terse"},
			{"role":"user","content":"fix it"},
			{"role":"assistant","content":"Reading.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{\"path\":\"a.go\",\"limit\":5}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"package a"}]}`,
	}})
}
