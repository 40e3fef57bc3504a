package rewrite

import (
	"math/bits"
	"sync"
)

// Scratch bodies. The turn engine's edits make one body from another: the
// ledger replay's result is only the input of the request edits, whose
// result is what goes upstream. A fresh heap buffer the size of a long
// history costs far more than copying into it (about 300 µs for 1 MB on a
// 2-core machine, against 40 µs into a buffer already mapped: the runtime
// zeroes and faults in every page of a large allocation), so the bodies
// edits make come from these pools, one per power-of-two size: an
// intermediate body goes back as soon as the next edit has copied it
// (Parsed tracks which body is its scratch), the final one when its holder
// releases it (Parsed.ReleaseFinal, at the end of the turn). Bodies below
// scratchMinBytes are allocated as usual.

const (
	scratchMinBytes = 32 << 10
	scratchMaxShift = 26 // 64 MiB: larger bodies are allocated as usual
)

var scratchPools [scratchMaxShift + 1]sync.Pool

// scratchClass is the pool of buffers of capacity 1<<class that fits n
// bytes; ok is false when n is outside the pooled sizes.
func scratchClass(n int) (class int, ok bool) {
	if n < scratchMinBytes {
		return 0, false
	}
	class = bits.Len(uint(n - 1))
	return class, class <= scratchMaxShift
}

// getScratch returns an empty buffer with room for n bytes: pooled when n
// is in the pooled sizes, else nil (append allocates as usual).
func getScratch(n int) []byte {
	class, ok := scratchClass(n)
	if !ok {
		return nil
	}
	if b, _ := scratchPools[class].Get().(*[]byte); b != nil {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<class)
}

// putScratch gives b back to its pool. b must not be used afterwards, by
// anyone: only a buffer getScratch returned and nothing else references.
func putScratch(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return // not one of ours
	}
	class, ok := scratchClass(c)
	if !ok || 1<<class != c {
		return
	}
	b = b[:0]
	scratchPools[class].Put(&b)
}
