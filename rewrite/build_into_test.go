package rewrite_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestBuildIntoSameBytes: a session's second request, built in the buffer
// of the body its first request sent (BuildTarget), gives exactly the bytes
// of building it anew, for every API, whether its edits repeat the first
// request's or change (other turns edited, other texts, another system
// note, tools added or not), and whatever share of the agent bodies the
// target claims up to the true one. The prefix it reports kept is the
// first body's, and a request that repeats the first one's edits keeps
// most of it.
func TestBuildIntoSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tool := conv.ToolSpec{Name: "shepherd_note", Description: "a tool", Parameters: []byte(`{"type":"object"}`)}
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			// Long conversations with a system prompt and tools, as agents
			// send them: the edits then find their members.
			withMembers := func(n int) []byte {
				b, err := api.NewCodec(nil).ApplyEdits(apitest.LongConversation(t, api, n),
					conv.RequestEdits{AppendSystem: []string{"You are an agent."}, AddTools: []conv.ToolSpec{{Name: "read", Parameters: []byte(`{"type":"object"}`)}}, SetMaxOutputTokens: 1000})
				require.NoError(t, err)
				return b
			}
			first, longer := withMembers(40), withMembers(41)
			// The same request with one early turn's text changed: its
			// bytes past the shared prefix must be copied, not kept.
			changed := bytes.Replace(longer, []byte(`step 5"`), []byte(`step 7"`), 1)
			require.NotEqual(t, longer, changed)
			turns := apitest.UserTurns(t, api, first, false)
			require.NotEmpty(t, turns)
			built, keptMost := 0, 0
			for trial := range 40 {
				second := longer
				if trial%5 == 1 {
					second = changed
				}
				shared := rewrite.CommonPrefix(first, second)
				var ops1 []rewrite.UserTexts
				for _, p := range turns {
					if rng.IntN(2) == 0 {
						ops1 = append(ops1, rewrite.UserTexts{Pos: p, Texts: []string{fmt.Sprintf("note %d", p)}})
					}
				}
				probe := api.NewCodec(apitest.Views)
				_, err := probe.ParseRequest(first)
				require.NoError(t, err)
				if _, ok := rewrite.UserTextSplices(probe.(rewrite.TurnCodec), probe.(rewrite.UserTurnLocator), nil, first, ops1); !ok {
					ops1 = nil // turns that overlap (tool runs) go one by one: into a body of their own
				}
				e1 := conv.RequestEdits{AppendSystem: []string{"chapters"}}
				ops2, e2 := slices.Clone(ops1), e1
				same := trial%4 == 0
				if !same {
					if len(ops2) > 0 && rng.IntN(2) == 0 {
						ops2[rng.IntN(len(ops2))].Texts = []string{"changed"}
					}
					if rng.IntN(2) == 0 {
						ops2 = append(ops2, rewrite.UserTexts{Pos: turns[rng.IntN(len(turns))], Texts: []string{"more"}})
						slices.SortFunc(ops2, func(a, b rewrite.UserTexts) int { return a.Pos - b.Pos })
						ops2 = slices.CompactFunc(ops2, func(a, b rewrite.UserTexts) bool { return a.Pos == b.Pos })
					}
					if rng.IntN(2) == 0 {
						e2.AppendSystem = []string{"other chapters"}
					}
					if rng.IntN(2) == 0 {
						e2.AddTools = []conv.ToolSpec{tool}
					}
					if rng.IntN(4) == 0 {
						e2.SetMaxOutputTokens = 2000 // on some APIs an edit of the whole body after the copy
					}
				}
				edit := func(c rewrite.Codec, body []byte, ops []rewrite.UserTexts, e conv.RequestEdits) []byte {
					_, err := c.ParseRequest(body)
					require.NoError(t, err)
					out, err := c.(rewrite.UserTextsEditor).ApplyEditsWithUserTexts(body, ops, e)
					require.NoError(t, err)
					return out
				}
				c1 := api.NewCodec(apitest.Views)
				sent1 := edit(c1, first, ops1, e1)
				runs1 := slices.Clone(c1.(rewrite.CopyMapper).CopyRuns(first, sent1))
				prev := rewrite.CopyForGrowth(sent1)
				before := slices.Clone(prev)
				want := edit(api.NewCodec(nil), second, ops2, e2)

				c2 := api.NewCodec(apitest.Views)
				_, err = c2.ParseRequest(second)
				require.NoError(t, err)
				tgt := &rewrite.BuildTarget{Prev: prev, PrevRuns: runs1, Agent: second, Shared: rng.IntN(shared + 1)}
				if trial%2 == 0 {
					tgt.Shared = shared
				}
				c2.(rewrite.BuildTargeter).BuildInto(tgt)
				got, err := c2.(rewrite.UserTextsEditor).ApplyEditsWithUserTexts(second, ops2, e2)
				require.NoError(t, err)
				require.Equal(t, string(want), string(got), "trial %d", trial)
				if !tgt.Built {
					continue
				}
				built++
				require.Equal(t, &prev[:1][0], &got[:1][0], "built elsewhere than the target")
				require.LessOrEqual(t, tgt.Kept, len(before))
				require.Equal(t, string(before[:tgt.Kept]), string(got[:tgt.Kept]), "trial %d: kept %d", trial, tgt.Kept)
				if same && tgt.Shared == shared && tgt.Kept >= len(first)*3/4 {
					keptMost++
				}
			}
			require.Positive(t, built, "no request was built in its target")
			require.Positive(t, keptMost, "no repeated request kept most of the first body")
		})
	}
}
