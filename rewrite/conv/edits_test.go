package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// mergeOneByOne is MergeAll's reference: o's edits appended after e's.
func mergeOneByOne(e *RequestEdits, o RequestEdits) {
	e.AddTools = append(e.AddTools, o.AddTools...)
	e.AppendSystem = append(e.AppendSystem, o.AppendSystem...)
	e.AppendUserText = append(e.AppendUserText, o.AppendUserText...)
	if o.SetMaxOutputTokens > 0 {
		e.SetMaxOutputTokens = o.SetMaxOutputTokens
	}
	e.ReplaceResults = append(e.ReplaceResults, o.ReplaceResults...)
	e.DropBefore = max(e.DropBefore, o.DropBefore)
}

// MergeAll merges as the parts merged one after another would, and its
// lists are full (a list handed back whole from one part is capped):
// appending to the result never writes into a part.
func TestMergeAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := func(p string) []string {
		var out []string
		for i := range rng.IntN(3) {
			out = append(out, fmt.Sprint(p, i))
		}
		return out
	}
	for round := range 2000 {
		parts := make([]RequestEdits, rng.IntN(5))
		for i := range parts {
			p := fmt.Sprint(round, ".", i, ".")
			parts[i] = RequestEdits{AppendSystem: strs(p + "s"), AppendUserText: strs(p + "u"),
				SetMaxOutputTokens: int64(rng.IntN(3)) * 100, DropBefore: rng.IntN(3)}
			for _, n := range strs(p + "t") {
				parts[i].AddTools = append(parts[i].AddTools, ToolSpec{Name: n})
			}
			for k := range rng.IntN(2) {
				parts[i].ReplaceResults = append(parts[i].ReplaceResults, ResultEdit{Msg: i, Block: k, Text: p})
			}
		}
		var want RequestEdits
		for _, e := range parts {
			mergeOneByOne(&want, e)
		}
		got := MergeAll(parts)
		require.Equal(t, want, got, "round %d", round)
		require.Equal(t, len(got.AppendSystem), cap(got.AppendSystem), "an append to the result must copy")
		require.Equal(t, len(got.AddTools), cap(got.AddTools))
		require.Equal(t, len(got.AppendUserText), cap(got.AppendUserText))
	}
}
