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

// conversationRounds is implemented by every codec in its test file: the
// elements of round i of a long conversation (user text, assistant call(s)
// with id, tool result(s)).
type conversationRounds interface {
	round(i int, id string) []string
}

// longConversation builds a body of api with n rounds: user text, assistant
// call, tool result(s); spacing varies so separators are exercised.
func longConversation(api *Descriptor, n int) []byte {
	var els []string
	sep := []string{",", ", ", ",\n  "}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		els = append(els, codecFor(api).(conversationRounds).round(i, id)...)
	}
	var b strings.Builder
	for i, e := range els {
		if i > 0 {
			b.WriteString(sep[i%len(sep)])
		}
		b.WriteString(e)
	}
	key := codecFor(api).(userTurnLocator).conversationKey()
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
