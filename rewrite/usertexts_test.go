package rewrite_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
)

// The batch gives exactly the bytes of the one-by-one path, for every API,
// on fixtures and long conversations, for random sets of turns.
func TestAppendUserTextsMatchesOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			tc := apitest.CodecFor(api)
			for _, body := range [][]byte{apitest.Fixture(t, api, "request.json"), apitest.LongConversation(t, api, 12)} {
				for _, last := range []bool{true, false} {
					turns := apitest.UserTurns(t, api, body, last)
					require.NotEmpty(t, turns)
					for trial := range 40 {
						var ops []rewrite.UserTexts
						for _, p := range turns {
							if trial == 0 || rng.IntN(2) == 0 {
								ops = append(ops, rewrite.UserTexts{Pos: p, Texts: []string{fmt.Sprintf("r%d", p), "second \"quoted\""}})
							}
						}
						rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
						want, err := rewrite.AppendUserTextsOneByOne(tc, body, ops)
						require.NoError(t, err)
						fallbacks := rewrite.UserTextFallbacks()
						got, err := tc.AppendUserTexts(body, ops)
						require.NoError(t, err)
						require.Equal(t, string(want), string(got), "ops %v", ops)
						if last {
							require.Equal(t, fallbacks, rewrite.UserTextFallbacks(), "the batch was applied in one pass")
						}
					}
				}
			}
		})
	}
}

// Errors are the one-by-one path's: they name the position.
func TestAppendUserTextsErrors(t *testing.T) {
	for _, api := range apis.All() {
		tc := apitest.CodecFor(api)
		body := apitest.LongConversation(t, api, 3)
		turns := apitest.UserTurns(t, api, body, true)
		for _, bad := range []int{-1, 1000} {
			ops := []rewrite.UserTexts{{Pos: turns[0], Texts: []string{"a"}}, {Pos: bad, Texts: []string{"b"}}}
			_, wantErr := rewrite.AppendUserTextsOneByOne(tc, body, ops)
			require.Error(t, wantErr, "%s %d", api, bad)
			_, err := tc.AppendUserTexts(body, ops)
			require.EqualError(t, err, wantErr.Error())
			// The same with the body parsed (indexed): the batch then
			// finds the turns from the index.
			parsed := apitest.CodecFor(api)
			_, err = parsed.(rewrite.Codec).ParseRequest(body)
			require.NoError(t, err)
			_, err = parsed.AppendUserTexts(body, ops)
			require.EqualError(t, err, wantErr.Error())
		}
	}
}

func BenchmarkReplayUserTexts(b *testing.B) {
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) { benchmarkReplayUserTexts(b, api) })
	}
}

func benchmarkReplayUserTexts(b *testing.B, api *rewrite.Descriptor) {
	body := apitest.LongConversation(b, api, 100)
	turns := apitest.UserTurns(b, api, body, true)
	ops := make([]rewrite.UserTexts, len(turns))
	for i, p := range turns {
		ops[i] = rewrite.UserTexts{Pos: p, Texts: []string{"<system-reminder>Active topic: benchmarking</system-reminder>"}}
	}
	tc := apitest.CodecFor(api)
	b.Run("one-by-one", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		apitest.ReportCPU(b, func() { _, _ = rewrite.AppendUserTextsOneByOne(tc, body, ops) })
	})
	b.Run("batched", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		apitest.ReportCPU(b, func() { _, _ = tc.AppendUserTexts(body, ops) })
	})
}

// A batch notes the edit it made of each turn (Reuse.Made), and a later
// batch given those edits (Reuse.Known) takes them instead of editing the
// turn again, when the turn's span is the same; otherwise it edits the
// turn. A batch that goes one by one notes nothing.
func TestAppendUserTextsReuse(t *testing.T) {
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			tc := apitest.CodecFor(api)
			body := apitest.LongConversation(t, api, 8)
			turns := apitest.UserTurns(t, api, body, true)
			require.GreaterOrEqual(t, len(turns), 3)
			batch := func(known []rewrite.TurnSplice) ([]rewrite.UserTexts, string) {
				ops := make([]rewrite.UserTexts, len(turns))
				for i, p := range turns {
					ops[i] = rewrite.UserTexts{Pos: p, Texts: []string{fmt.Sprintf("reminder %d", p)}, Reuse: &rewrite.SpliceReuse{}}
					if known != nil {
						ops[i].Reuse.Known = known[i]
					}
				}
				out, err := tc.AppendUserTexts(body, ops)
				require.NoError(t, err)
				return ops, string(out)
			}
			ops, first := batch(nil)
			plain := make([]rewrite.UserTexts, len(ops))
			for i := range ops {
				plain[i] = rewrite.UserTexts{Pos: ops[i].Pos, Texts: ops[i].Texts}
			}
			ref, err := rewrite.AppendUserTextsOneByOne(tc, body, plain)
			require.NoError(t, err)
			require.Equal(t, string(ref), first)
			made := make([]rewrite.TurnSplice, len(ops))
			for i := range ops {
				made[i] = ops[i].Reuse.Made
				require.Positive(t, made[i].SpanEnd, "turn %d: no edit noted", ops[i].Pos)
				require.Contains(t, string(made[i].Splice.Bytes), fmt.Sprintf("reminder %d", ops[i].Pos))
				require.Greater(t, made[i].Splice.Start, made[i].SpanStart,
					"the splice leaves the turn's first bytes in place")
			}

			// The same edits given back: the same bytes, the same edits noted.
			ops, again := batch(made)
			require.Equal(t, first, again)
			for i := range ops {
				require.Equal(t, made[i], ops[i].Reuse.Made)
			}

			// A known edit is taken as it is (the caller vouched for it):
			// a marker in its bytes shows up in the body.
			marked := append([]rewrite.TurnSplice(nil), made...)
			k := len(marked) / 2
			marked[k].Splice.Bytes = []byte(`MARKER`)
			_, got := batch(marked)
			require.Contains(t, got, "MARKER")

			// A known edit of another span is not: the turn is edited again.
			moved := append([]rewrite.TurnSplice(nil), marked...)
			moved[k].SpanStart++
			_, got = batch(moved)
			require.Equal(t, first, got)

			// Two ops on one turn go one by one, and note nothing.
			dup := []rewrite.UserTexts{
				{Pos: turns[0], Texts: []string{"a"}, Reuse: &rewrite.SpliceReuse{}},
				{Pos: turns[0], Texts: []string{"b"}, Reuse: &rewrite.SpliceReuse{}},
				{Pos: turns[1], Texts: []string{"c"}, Reuse: &rewrite.SpliceReuse{}},
			}
			_, err = tc.AppendUserTexts(body, dup)
			require.NoError(t, err)
			for _, op := range dup {
				require.Zero(t, op.Reuse.Made.SpanEnd)
			}
		})
	}
}
