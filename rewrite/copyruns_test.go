package rewrite_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// spliced makes random splices to src (insertions, replacements,
// deletions, steered by the bytes of plan) and returns the result with its
// copy runs, worked out here independently of package rewrite.
func spliced(src, plan []byte) ([]byte, []rewrite.CopyRun) {
	var out []byte
	var runs []rewrite.CopyRun
	at := 0
	for i := 0; i+2 < len(plan); i += 3 {
		start := at + int(plan[i])%(len(src)-at+1)
		end := start + int(plan[i+1]%4)
		if end > len(src) {
			end = len(src)
		}
		if start > at {
			runs = append(runs, rewrite.CopyRun{Out: len(out), Src: at, Len: start - at})
		}
		out = append(out, src[at:start]...)
		for range int(plan[i+2] % 5) {
			out = append(out, 'a'+plan[i+2]%3)
		}
		at = end
	}
	if at < len(src) {
		runs = append(runs, rewrite.CopyRun{Out: len(out), Src: at, Len: len(src) - at})
	}
	return append(out, src[at:]...), runs
}

// sharedCase checks SharedPrefix against CommonPrefix for two sources
// that agree on their first n bytes, each edited by its plan.
func sharedCase(t *testing.T, a, b, planA, planB []byte, n int) {
	t.Helper()
	outA, runsA := spliced(a, planA)
	outB, runsB := spliced(b, planB)
	require.True(t, rewrite.ValidCopyRuns(runsA, len(outA), len(a)))
	require.True(t, rewrite.ValidCopyRuns(runsB, len(outB), len(b)))
	require.Equal(t, rewrite.CommonPrefix(outA, outB), rewrite.SharedPrefix(outA, outB, runsA, runsB, n),
		"a %q b %q n %d: %q %v / %q %v", a, b, n, outA, runsA, outB, runsB)
}

// TestSharedPrefixMatchesCommonPrefix: for bodies that share a prefix and
// are edited alike, differently or not at all, SharedPrefix finds exactly
// the prefix a byte-for-byte comparison finds.
func TestSharedPrefixMatchesCommonPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	word := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(3))
		}
		return b
	}
	for range 5000 {
		a := word(rng.IntN(60))
		b := append(append([]byte(nil), a[:rng.IntN(len(a)+1)]...), word(rng.IntN(20))...)
		planA := word(3 * rng.IntN(6))
		planB := planA // the same edits (a hook's replay), or others
		if rng.IntN(3) == 0 {
			planB = word(3 * rng.IntN(6))
		}
		sharedCase(t, a, b, planA, planB, rewrite.CommonPrefix(a, b))
	}
	// The sources' shared length may be known short of what they share.
	sharedCase(t, []byte("abcabc"), []byte("abcabc"), nil, nil, 3)
	sharedCase(t, []byte("abcabc"), []byte("abcabd"), []byte{2, 0, 1}, []byte{2, 0, 1}, 0)
}

// TestSharedPrefixComparesOnlyEdits: where both outputs copy the same
// offset below n, SharedPrefix takes the bytes as equal without reading
// them (here they are not, against the contract, to show it); inserted
// bytes and copies from past n are compared.
func TestSharedPrefixComparesOnlyEdits(t *testing.T) {
	a := []byte("0123456789XYZ")
	b := []byte("0123456789XYW")
	ra := []rewrite.CopyRun{{Out: 0, Src: 0, Len: 10}, {Out: 12, Src: 10, Len: 1}}
	// b's first ten bytes are claimed to be copies of source bytes that
	// equal a's: trusted, not compared.
	b[3] = '!'
	rb := []rewrite.CopyRun{{Out: 0, Src: 0, Len: 10}, {Out: 12, Src: 10, Len: 1}}
	require.Equal(t, 12, rewrite.SharedPrefix(a, b, ra, rb, 10), "copies below n trusted, inserted XY compared, Z vs W (source offset n) compared")
	require.Equal(t, 13, rewrite.SharedPrefix(a, b, ra, rb, 11), "Z vs W trusted too when the sources agree past them")
	require.Equal(t, 3, rewrite.SharedPrefix(a, b, ra, rb, 2), "copies at or past n compared")
	// Copies of different offsets are compared.
	rb2 := []rewrite.CopyRun{{Out: 0, Src: 1, Len: 10}}
	require.Equal(t, 3, rewrite.SharedPrefix(a, b, ra, rb2, 11))
}

// FuzzSharedPrefix: any two sources, any edits, any known shared length
// up to what they share.
func FuzzSharedPrefix(f *testing.F) {
	f.Add([]byte("hello world"), []byte("hello there"), []byte{1, 2, 3}, []byte{1, 2, 3}, uint8(6))
	f.Add([]byte(`{"messages":[1,2,3]}`), []byte(`{"messages":[1,2,3,4]}`), []byte{14, 0, 7}, []byte{14, 0, 7, 9, 1, 1}, uint8(18))
	f.Fuzz(func(t *testing.T, a, b, planA, planB []byte, k uint8) {
		n := min(int(k), rewrite.CommonPrefix(a, b))
		sharedCase(t, a, b, planA, planB, n)
	})
}
