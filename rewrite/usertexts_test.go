package rewrite

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// userTurns lists the view positions AppendUserTextAt accepts in body;
// with last, only the last of each run of tool messages (where the turn
// engine puts a turn's reminder).
func userTurns(t testing.TB, api *Descriptor, body []byte, last bool) []int {
	t.Helper()
	req, err := parseUncached(t, codecFor(api), body)
	require.NoError(t, err)
	var out []int
	for i, m := range req.Messages {
		if m.Role != conv.RoleUser && m.Role != conv.RoleTool {
			continue
		}
		if last && i+1 < len(req.Messages) && req.Messages[i+1].Role == conv.RoleTool {
			continue
		}
		out = append(out, i)
	}
	return out
}

// rounds holds, for each API, the elements of round i of a long
// conversation (user text, assistant call(s) with id, tool result(s));
// SetTestAPIs fills it.
var rounds = map[*Descriptor]func(i int, id string) []string{}

// geminiRound is one round of a Gemini longConversation.
func geminiRound(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","parts":[{"text":"step %d"}]}`, i),
		fmt.Sprintf(`{"role":"model","parts":[{"functionCall":{"name":"Read","args":{"n":%d}}}]}`, i),
		fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"name":"Read","response":{"content":"r%d"}}}]}`, i)}
}

// longConversation builds a body of api with n rounds: user text, assistant
// call, tool result(s); spacing varies so separators are exercised.
func longConversation(api *Descriptor, n int) []byte {
	var els []string
	sep := []string{",", ", ", ",\n  "}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		els = append(els, rounds[api](i, id)...)
	}
	var b strings.Builder
	for i, e := range els {
		if i > 0 {
			b.WriteString(sep[i%len(sep)])
		}
		b.WriteString(e)
	}
	key := codecFor(api).(UserTurnLocator).ConversationKey()
	return []byte(`{"model":"m","` + key + `":[` + b.String() + `]}`)
}

// The batch gives exactly the bytes of the one-by-one path, for every API,
// on fixtures and long conversations, for random sets of turns.
func TestAppendUserTextsMatchesOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, api := range allAPIs {
		t.Run(api.Name, func(t *testing.T) {
			tc := codecFor(api)
			for _, body := range [][]byte{fixture(t, api, "request.json"), longConversation(api, 12)} {
				for _, last := range []bool{true, false} {
					turns := userTurns(t, api, body, last)
					require.NotEmpty(t, turns)
					for trial := range 40 {
						var ops []UserTexts
						for _, p := range turns {
							if trial == 0 || rng.IntN(2) == 0 {
								ops = append(ops, UserTexts{Pos: p, Texts: []string{fmt.Sprintf("r%d", p), "second \"quoted\""}})
							}
						}
						rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
						want, err := appendUserTextsOneByOne(tc, body, ops)
						require.NoError(t, err)
						fallbacks := userTextFallbacks.Load()
						got, err := tc.AppendUserTexts(body, ops)
						require.NoError(t, err)
						require.Equal(t, string(want), string(got), "ops %v", ops)
						if last {
							require.Equal(t, fallbacks, userTextFallbacks.Load(), "the batch was applied in one pass")
						}
					}
				}
			}
		})
	}
}

// Errors are the one-by-one path's: they name the position.
func TestAppendUserTextsErrors(t *testing.T) {
	for _, api := range allAPIs {
		tc := codecFor(api)
		body := longConversation(api, 3)
		turns := userTurns(t, api, body, true)
		for _, bad := range []int{-1, 1000} {
			ops := []UserTexts{{Pos: turns[0], Texts: []string{"a"}}, {Pos: bad, Texts: []string{"b"}}}
			_, wantErr := appendUserTextsOneByOne(tc, body, ops)
			require.Error(t, wantErr, "%s %d", api, bad)
			_, err := tc.AppendUserTexts(body, ops)
			require.EqualError(t, err, wantErr.Error())
		}
	}
}

func BenchmarkReplayUserTexts(b *testing.B) {
	body := longConversation(Anthropic, 100)
	turns := userTurns(b, Anthropic, body, true)
	ops := make([]UserTexts, len(turns))
	for i, p := range turns {
		ops[i] = UserTexts{Pos: p, Texts: []string{"<system-reminder>Active topic: benchmarking</system-reminder>"}}
	}
	tc := codecFor(Anthropic)
	b.Run("one-by-one", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		reportCPU(b, func() { _, _ = appendUserTextsOneByOne(tc, body, ops) })
	})
	b.Run("batched", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		reportCPU(b, func() { _, _ = tc.AppendUserTexts(body, ops) })
	})
}

// chatRound is one round of a OpenAIChat longConversation.
func chatRound(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","content":"step %d"}`, i),
		fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"Read","arguments":"{}"}},{"id":"%s-b","type":"function","function":{"name":"Read","arguments":"{}"}}]}`, id, id),
		fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"r%d"}`, id, i),
		fmt.Sprintf(`{"role":"tool","tool_call_id":"%s-b","content":"s%d"}`, id, i)}
}

// responsesRound is one round of a OpenAIResponses longConversation.
func responsesRound(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","content":"step %d"}`, i),
		fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"Read","arguments":"{}"}`, id),
		fmt.Sprintf(`{"type":"function_call","call_id":"%s-b","name":"Read","arguments":"{}"}`, id),
		fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"r%d"}`, id, i),
		fmt.Sprintf(`{"type":"function_call_output","call_id":"%s-b","output":"s%d"}`, id, i)}
}

// anthropicRound is one round of a Anthropic longConversation.
func anthropicRound(i int, id string) []string {
	return []string{fmt.Sprintf(`{"role":"user","content":"step %d"}`, i),
		fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Read","input":{"n":%d}}]}`, id, i),
		fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"r%d"}]}`, id, i)}
}
