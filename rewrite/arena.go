package rewrite

// Arena keeps copies of small byte slices (events a splicer holds, the
// parts of a reply it rebuilds) in shared blocks, so that keeping one
// allocates once per block instead of once per copy; blocks double from
// ArenaFirstBlock up to ArenaMaxBlock, so a long stream of held events
// allocates a handful of times, and a stream that keeps little (an idle
// one, held after a few events) keeps a small block. Copies never move and
// never overlap: each is capped at its own length, so appending to one
// reallocates it rather than writing into its neighbour. The zero value is
// ready to use; an Arena is not safe for concurrent use.
type Arena struct {
	block []byte
}

// ArenaFirstBlock is the size of an arena's first block; a slice larger
// than a quarter of ArenaBlock gets an allocation of its own.
// ArenaMaxBlock bounds the doubling.
const (
	ArenaFirstBlock = 512
	ArenaBlock      = 8 << 10
	ArenaMaxBlock   = 256 << 10
)

// Keep returns a copy of b (nil for nil, like bytes.Clone).
func (a *Arena) Keep(b []byte) []byte {
	if b == nil {
		return nil
	}
	return a.keep(len(b), func(dst []byte) []byte { return append(dst, b...) })
}

// KeepString returns a copy of s as bytes.
func (a *Arena) KeepString(s string) []byte {
	return a.keep(len(s), func(dst []byte) []byte { return append(dst, s...) })
}

func (a *Arena) keep(n int, appendTo func([]byte) []byte) []byte {
	if n == 0 {
		return []byte{} // empty, not nil (no allocation)
	}
	if n > ArenaBlock/4 {
		return appendTo(make([]byte, 0, n))
	}
	if n > cap(a.block)-len(a.block) {
		size := max(ArenaFirstBlock, 2*cap(a.block))
		for size < n {
			size *= 2
		}
		a.block = make([]byte, 0, min(size, ArenaMaxBlock))
	}
	start := len(a.block)
	a.block = appendTo(a.block)
	return a.block[start:len(a.block):len(a.block)]
}
