package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// geminiReuse is a long Gemini conversation for apitest.CheckReuse.
var geminiReuse = apitest.ReuseCase{
	Build: func(elems []string) []byte {
		sys, _ := json.Marshal(apitest.LongPrefix)
		return []byte(`{"systemInstruction":{"parts":[{"text":` + string(sys) + `}]},"contents":[` + strings.Join(elems, ",") + `]}`)
	},
	Pool: []string{
		`{"role":"user","parts":[{"text":"fix \"it\"\n"}]}`,
		`{"role":"model","parts":[{"text":"look","thought":true},{"text":"Reading."},{"functionCall":{"name":"Read","args":{"path":"a.go","limit":5}},"thoughtSignature":"c2ln"}]}`,
		`{"role":"model","parts":[{"functionCall":{"id":"g_1","name":"Grep","args":{"q":"x","n":[1,20]}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"output":"package a"}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"id":"g_1","name":"Grep","response":{"output":"none"}}}]}`,
	},
}

// TestParseReuseMatchesScratch: parsing through the index memo, which
// reuses the previous body's views, equals parsing each body from scratch.
func TestParseReuseMatchesScratch(t *testing.T) {
	apitest.CheckReuseSeeds(t, Descriptor, geminiReuse, 100)
}
