package openaichat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// chatReuse is a long Chat Completions conversation for
// apitest.CheckReuse: tool messages name their call only by id, ids repeat,
// arguments are JSON in strings, leading system messages.
var chatReuse = apitest.ReuseCase{
	Build: func(elems []string) []byte {
		sys, _ := json.Marshal(apitest.LongPrefix)
		return []byte(`{"model":"gpt","messages":[{"role":"system","content":` + string(sys) + `},` +
			strings.Join(elems, ",") + `],"max_tokens":100}`)
	},
	Pool: []string{
		`{"role":"system","content":"Be brief."}`,
		`{"role":"user","content":"hi caf\u00e9 \"quoted\"\n"}`,
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\",\"n\":12}"}}]}`,
		`{"role":"assistant","content":"Running.","tool_calls":[{"id":"call_2","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls\",\"t\":3.5}"}},{"id":"call_1","type":"function","function":{"name":"grep","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"ok\n1"}`,
		`{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"exit 0"}]}`,
		`{"role":"tool","tool_call_id":"call_9","content":"who?"}`,
		`{"role":"assistant","content":"Done: 42."}`,
	},
}

// TestParseReuseMatchesScratch: parsing through the index memo, which
// reuses the previous body's views, equals parsing each body from scratch.
func TestParseReuseMatchesScratch(t *testing.T) {
	apitest.CheckReuseSeeds(t, Descriptor, chatReuse, 150)
}

// FuzzParseReuse is TestParseReuseMatchesScratch from fuzzed seeds.
func FuzzParseReuse(f *testing.F) {
	f.Add(uint64(7))
	f.Fuzz(func(t *testing.T, seed uint64) { apitest.CheckReuse(t, Descriptor, chatReuse, seed, 30) })
}
