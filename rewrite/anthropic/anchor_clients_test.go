package anthropic

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
		Name: "anthropic claude code",
		Model: `{"model":"m","max_tokens":9,"messages":[
			{"role":"user","content":[{"type":"text","text":"fix it","cache_control":{"type":"ephemeral"}}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"look","signature":"c2ln"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go","limit":5}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a"}]}]}`,
		// cache_control moved onto the newest turn, the first turn as a
		// string, input re-serialised, thinking's signature normalised.
		Client: `{"model":"m","max_tokens":9,"messages":[
			{"role":"user","content":"fix it"},
			{"content":[{"signature":"","thinking":"look","type":"thinking"},{"text":"Reading.","type":"text"},{"input":{"limit":5.0,"path":"a.go"},"name":"Read","id":"toolu_1","type":"tool_use"}],"role":"assistant"},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"package a"}],"cache_control":{"type":"ephemeral"}}]}]}`,
		Edited: `{"model":"m","max_tokens":9,"messages":[
			{"role":"user","content":"fix it"},
			{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"b.go","limit":5}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a"}]}]}`,
	}})
}
