package rewrite

import (
	"bytes"
	"hash/maphash"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// sumAfter is the digest of what after(system) hashed, with tail added.
func sumAfter(p *promptStates, system, tail string) []byte {
	h := p.after(system)
	h.Write([]byte(tail))
	return h.Sum(nil)
}

func sumDirect(system, tail string) []byte {
	h := startFingerprint(system)
	h.Write([]byte(tail))
	return h.Sum(nil)
}

// A memoized state is the state of hashing the prompt, cold or warm, and
// a clone: what one caller adds does not reach the next.
func TestPromptStatesSameDigest(t *testing.T) {
	p := newPromptStates(4, maphash.String)
	long := strings.Repeat("You are a coding agent. ", 200)
	for _, system := range []string{"", "short", long, long + "x"} {
		for round := range 3 {
			require.Equal(t, sumDirect(system, "anchor"), sumAfter(p, system, "anchor"), "round %d, %d bytes", round, len(system))
			require.Equal(t, sumDirect(system, "other"), sumAfter(p, system, "other"))
		}
	}
	require.Len(t, p.byKey, 2, "only prompts of at least promptStateMin are kept")
}

// Prompts whose keys collide never get each other's state, and beyond max
// the oldest goes.
func TestPromptStatesCollisions(t *testing.T) {
	p := newPromptStates(2, func(maphash.Seed, string) uint64 { return 7 })
	a, b := strings.Repeat("a", 2000), strings.Repeat("b", 2000)
	for range 3 {
		require.Equal(t, sumDirect(a, "t"), sumAfter(p, a, "t"))
		require.Equal(t, sumDirect(b, "t"), sumAfter(p, b, "t"))
	}
	q := newPromptStates(2, func(_ maphash.Seed, s string) uint64 { return uint64(s[0]) })
	for _, s := range []string{a, b, strings.Repeat("c", 2000), a} {
		require.Equal(t, sumDirect(s, "t"), sumAfter(q, s, "t"))
	}
	require.Len(t, q.byKey, 2)
	require.Len(t, q.order, 2)
}

// The prompt is kept as a copy: a view's string may point into the
// request body, a pooled buffer that is rewritten afterwards.
func TestPromptStatesOwnCopy(t *testing.T) {
	p := newPromptStates(4, maphash.String)
	buf := bytes.Repeat([]byte("p"), 3000)
	want := sumDirect(string(buf), "z")
	sumAfter(p, jsonkit.UnsafeString(buf), "") // aliases buf
	for i := range buf {
		buf[i] = 'q' // the buffer is reused
	}
	for _, e := range p.byKey {
		require.Equal(t, strings.Repeat("p", 3000), e.prompt)
	}
	require.Equal(t, want, sumAfter(p, strings.Repeat("p", 3000), "z"))
}

func TestPromptStatesConcurrent(t *testing.T) {
	p := newPromptStates(4, maphash.String)
	long := strings.Repeat("system prompt ", 300)
	want := sumDirect(long, "x")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if !bytes.Equal(want, sumAfter(p, long, "x")) {
					t.Error("wrong digest")
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzPromptStates(f *testing.F) {
	f.Add(strings.Repeat("a", 1500), strings.Repeat("a", 1499)+"b", "tail")
	f.Add("", "x", "")
	f.Fuzz(func(t *testing.T, s1, s2, tail string) {
		p := newPromptStates(1, func(maphash.Seed, string) uint64 { return 1 }) // every prompt collides
		for _, s := range []string{s1, s2, s1, s2 + s1, s1} {
			require.Equal(t, sumDirect(s, tail), sumAfter(p, s, tail))
		}
	})
}
