package responses

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
		Name: "openai responses codex",
		Model: `{"model":"m","input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]},
			{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"look"}],"encrypted_content":"enc"},
			{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Reading.","annotations":[]}]},
			{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"Read","arguments":"{\"path\":\"a.go\"}"},
			{"type":"function_call_output","call_id":"call_1","output":"package a"}]}`,
		// Item ids and statuses dropped (store=false clients), the
		// reasoning item left out, the user turn as a plain string.
		Client: `{"model":"m","input":[
			{"role":"user","content":"fix it"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading."}]},
			{"type":"function_call","call_id":"call_1","name":"Read","arguments":"{ \"path\": \"a.go\" }"},
			{"type":"function_call_output","call_id":"call_1","output":"package a"}]}`,
		Edited: `{"model":"m","input":[
			{"role":"user","content":"fix it"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading!"}]},
			{"type":"function_call","call_id":"call_1","name":"Read","arguments":"{\"path\":\"a.go\"}"},
			{"type":"function_call_output","call_id":"call_1","output":"package a"}]}`,
	}})
}
