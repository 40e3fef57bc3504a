package rewrite_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// TestArenaKeep: a kept copy equals its source, does not change when the
// source or a neighbour does, cannot be overwritten by appending to a
// neighbour, and keeps nil as nil; large slices and a full block still
// copy.
func TestArenaKeep(t *testing.T) {
	var a rewrite.Arena
	if a.Keep(nil) != nil {
		t.Fatal("Keep(nil) is not nil")
	}
	if got := a.Keep([]byte{}); got == nil || len(got) != 0 {
		t.Fatalf("Keep(empty) = %#v, want an empty non-nil slice", got)
	}
	src := []byte("first")
	first := a.Keep(src)
	second := a.KeepString("second")
	src[0] = 'X'
	if string(first) != "first" || string(second) != "second" {
		t.Fatalf("copies changed: %q %q", first, second)
	}
	grown := append(first, "-more"...)
	if string(second) != "second" || string(grown) != "first-more" {
		t.Fatalf("appending to a copy wrote into its neighbour: %q %q", second, grown)
	}
	big := bytes.Repeat([]byte("b"), rewrite.ArenaBlock)
	if got := a.Keep(big); !bytes.Equal(got, big) || &got[0] == &big[0] {
		t.Fatal("a large slice is not copied")
	}
	var kept [][]byte
	for i := range 3 * rewrite.ArenaBlock / 100 { // several blocks
		s := strings.Repeat(string(rune('a'+i%26)), 100)
		kept = append(kept, a.KeepString(s))
	}
	// Copies up to a quarter of ArenaBlock, larger than a small first
	// block, are kept whole.
	for _, n := range []int{rewrite.ArenaFirstBlock - 1, rewrite.ArenaFirstBlock + 1, rewrite.ArenaBlock / 4} {
		var b rewrite.Arena
		s := strings.Repeat("c", n)
		if got := b.KeepString(s); string(got) != s {
			t.Fatalf("a copy of %d bytes in a fresh arena is %d bytes", n, len(got))
		}
		if got := b.KeepString(s); string(got) != s {
			t.Fatalf("a second copy of %d bytes is %d bytes", n, len(got))
		}
	}
	for i, k := range kept {
		if want := strings.Repeat(string(rune('a'+i%26)), 100); string(k) != want {
			t.Fatalf("copy %d = %q, want %q", i, k, want)
		}
	}
}
