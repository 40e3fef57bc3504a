package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// anthropicReuse is a long Messages conversation for apitest.CheckReuse:
// tool calls whose results name them only by id (so a result's view
// depends on the calls before it), repeated ids, escapes, numbers.
var anthropicReuse = apitest.ReuseCase{
	Build: func(elems []string) []byte {
		sys, _ := json.Marshal(apitest.LongPrefix)
		return []byte(`{"model":"claude","max_tokens":1024,"system":` + string(sys) +
			`,"messages":[` + strings.Join(elems, ",") + `],"stream":false}`)
	},
	Pool: []string{
		`{"role":"user","content":"Fix the \"bug\" in main.go\nplease"}`,
		`{"role":"user","content":[{"type":"text","text":"again, caf\u00e9","cache_control":{"type":"ephemeral"}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.go","n":12,"x":1.5e3}}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"tool_use","id":"toolu_2","name":"bash","input":{"cmd":"ls -la \"dir\"","timeout":300}}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"grep","input":{"q":"x","n":[1,2,30]}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"line 1\n\tline 2"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"exit 1"}]}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"unknown call"},{"type":"text","text":"and?"}]}`,
		`{"role":"assistant","content":"Done: 42."}`,
	},
}

// TestParseReuseMatchesScratch: parsing through the index memo, which
// reuses the previous body's views, equals parsing each body from scratch.
func TestParseReuseMatchesScratch(t *testing.T) {
	apitest.CheckReuseSeeds(t, Descriptor, anthropicReuse, 150)
}

// FuzzParseReuse is TestParseReuseMatchesScratch from fuzzed seeds.
func FuzzParseReuse(f *testing.F) {
	f.Add(uint64(7))
	f.Fuzz(func(t *testing.T, seed uint64) { apitest.CheckReuse(t, Descriptor, anthropicReuse, seed, 30) })
}
