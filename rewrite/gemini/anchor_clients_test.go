package gemini

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
		Name: "gemini cli",
		Model: `{"contents":[
			{"role":"user","parts":[{"text":"fix it"}]},
			{"role":"model","parts":[{"text":"look","thought":true},{"text":"Reading."},{"functionCall":{"name":"Read","args":{"path":"a.go","limit":5}},"thoughtSignature":"c2ln"},{"functionCall":{"name":"Grep","args":{"q":"x"}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"output":"package a"}}},{"functionResponse":{"name":"Grep","response":{"output":"none"}}}]}]}`,
		// gemini-cli: its own call ids, thoughts stripped, a synthetic
		// signature, args re-serialised from a map.
		Client: `{"contents":[
			{"role":"user","parts":[{"text":"fix it"}]},
			{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"Read_1764090000000_0","name":"Read","args":{"limit":5,"path":"a.go"}},"thoughtSignature":"skip_thought_signature_validator"},{"functionCall":{"id":"Grep_1764090000000_1","name":"Grep","args":{"q":"x"}},"thoughtSignature":"c2ln"}]},
			{"role":"user","parts":[{"functionResponse":{"id":"Read_1764090000000_0","name":"Read","response":{"output":"package a"}}},{"functionResponse":{"id":"Grep_1764090000000_1","name":"Grep","response":{"output":"none"}}}]}]}`,
		Edited: `{"contents":[
			{"role":"user","parts":[{"text":"fix it"}]},
			{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"name":"Grep","args":{"q":"x"}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"Grep","response":{"output":"none"}}}]}]}`,
	}})
}
