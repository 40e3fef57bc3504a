package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// responsesReuse is a long Responses input for apitest.CheckReuse:
// assistant-side items that merge into one message, outputs naming their
// call only by id, repeated ids.
var responsesReuse = apitest.ReuseCase{
	Build: func(elems []string) []byte {
		sys, _ := json.Marshal(apitest.LongPrefix)
		return []byte(`{"model":"gpt","instructions":` + string(sys) + `,"input":[` + strings.Join(elems, ",") + `],"stream":true}`)
	},
	Pool: []string{
		`{"role":"user","content":"fix \"it\"\n"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"caf\u00e9"}]}`,
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"look"}],"encrypted_content":"enc"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading.","annotations":[]}]}`,
		`{"type":"function_call","call_id":"call_1","name":"Read","arguments":"{\"path\":\"a.go\",\"n\":12}"}`,
		`{"type":"function_call","call_id":"call_2","name":"Bash","arguments":"{\"cmd\":\"ls\"}"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"package a\n"}`,
		`{"type":"function_call_output","call_id":"call_2","output":"exit 0"}`,
		`{"type":"function_call_output","call_id":"call_9","output":"who?"}`,
	},
}

// TestParseReuseMatchesScratch: parsing through the index memo, which
// reuses the previous body's item views, equals parsing each body from
// scratch.
func TestParseReuseMatchesScratch(t *testing.T) {
	apitest.CheckReuseSeeds(t, Descriptor, responsesReuse, 100)
}
