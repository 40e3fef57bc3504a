package rewrite

import (
	"github.com/cespare/xxhash/v2"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// The index memo lets ParseRequest validate only what is new in a body.
// Agents resend their whole history with a few KB added at the end of the
// conversation; the memo keeps recent bodies (copies) with their indexes
// (jsonkit.Index), found by the hash of a body's first indexMemoKeyBytes
// bytes (the system prompt, tools and first messages of a conversation).
// The hash only picks a candidate: the two bodies are then compared byte
// for byte (CommonPrefix) and validation resumes after the last shared
// conversation element (jsonkit.ValidIndexedFrom), so a candidate that
// shares little, or nothing, only costs the comparison.
//
// The key hashes a prefix whose length is the largest power of two up to
// half the body, at most indexMemoKeyBytes: as a conversation grows, its
// key changes only when its length crosses a power of two (one miss), and
// the keyed bytes stay in the part agents never rewrite. Bodies below
// indexMemoMinBytes are validated whole (a few microseconds). An entry is taken out while a request uses it and put
// back for the new body, whose copy recycles the entry's buffer: only the
// bytes past the shared prefix are copied. Memory is bounded in bytes,
// least recently used first out.

const (
	indexMemoMinBytes = 8 << 10
	indexMemoKeyBytes = 32 << 10
)

type indexMemoEntry struct {
	key  uint64
	body []byte
	idx  *jsonkit.Index
}

// indexMemo is safe for concurrent use; a nil *indexMemo keeps nothing.
type indexMemo struct {
	entries *TakeMemo[uint64, *indexMemoEntry]
}

func newIndexMemo(budget int64) *indexMemo {
	if budget <= 0 {
		return nil
	}
	return &indexMemo{NewTakeMemo[uint64](budget, func(e *indexMemoEntry) int64 { return int64(cap(e.body)) })}
}

func (m *indexMemo) take(key uint64) *indexMemoEntry {
	e, _ := m.entries.Take(key)
	return e
}

func (m *indexMemo) put(e *indexMemoEntry) { m.entries.Put(e.key, e) }

// validIndexed is jsonkit.ValidIndexed(body), resumed from the memo's
// body of the same conversation when it has one, and remembered for the
// next request.
func (m *indexMemo) validIndexed(body []byte) (*jsonkit.Index, bool) {
	if m == nil || len(body) < indexMemoMinBytes {
		return jsonkit.ValidIndexed(body)
	}
	key := xxhash.Sum64(body[:memoKeyLen(len(body))])
	prev := m.take(key)
	if prev == nil {
		idx, ok := jsonkit.ValidIndexed(body)
		if ok {
			c := append([]byte(nil), body...)
			m.put(&indexMemoEntry{key: key, body: c, idx: idx.Rebase(c)})
		}
		return idx, ok
	}
	n := CommonPrefix(body, prev.body)
	idx, ok := jsonkit.ValidIndexedFrom(body, prev.idx, n)
	if !ok {
		m.put(prev) // still a good reference for the next request
		return idx, ok
	}
	c := append(prev.body[:n], body[n:]...) // ours: taken out of the memo
	m.put(&indexMemoEntry{key: key, body: c, idx: idx.Rebase(c)})
	return idx, ok
}

// memoKeyLen is how many leading bytes of an n-byte body its memo key
// hashes: the largest power of two up to n/2, at most indexMemoKeyBytes.
func memoKeyLen(n int) int {
	k := indexMemoKeyBytes
	for k > n/2 {
		k >>= 1
	}
	return k
}
