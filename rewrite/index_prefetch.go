package rewrite

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// A long request body arrives in pieces: a 1 MB history is read from the
// client in tens of reads over most of a millisecond, during which the
// proxy waits. The index memo's comparison of a body with the earlier one
// (CommonPrefix, about 30 µs per MB, most of a warm parse of a long
// history) can run in those waits instead of after the last byte: a
// BodyPrefetch is fed the body so far after each read; once the bytes that
// key the memo have arrived (the conversation's first two elements and the
// separator after them), it takes the key's bodies out of the memo and
// compares each piece with them as it comes, while the piece is still in
// the cache. ParseBody of the whole body, in the same buffer, then finishes
// the comparison (the bytes after the last piece fed) and picks among the
// bodies as closest would have; nothing else changes.
//
// A prefetch is found by its buffer (the body's first byte), so its owner
// must Close it before the buffer can hold another body: Close hands back
// the memo's bodies ParseBody did not take.

// prefetchMinBytes is the least body size worth a prefetch: below it a
// body arrives in a read or two.
const prefetchMinBytes = 64 << 10

// prefetchKeyWithin bounds how much of a body a prefetch scans for its
// key: one whose conversation's first two elements end later is compared
// when ParseBody sees it whole.
const prefetchKeyWithin = 256 << 10

// BodyPrefetch compares a request body with the index memo's bodies while
// it arrives. Feed and Close are called by the body's reader, one at a
// time; a nil *BodyPrefetch does nothing.
type BodyPrefetch struct {
	memo         *indexMemo
	conversation string
	// fed is the body as last fed; registered whether the prefetch is in
	// the memo's registry (it then holds ways' entries, taken out of the
	// memo); done that it no longer looks at its body.
	fed              []byte
	registered, done bool
	// keyAt is the body length at which the key is looked for next:
	// twice the last length it was not found at, so that a body whose
	// first elements arrive over many reads is scanned about twice over,
	// not once per read.
	keyAt int
	key   uint64
	ways  [indexMemoWays]prefetchWay
}

// prefetchWay is one of the key's bodies: e (nil: the way was empty) and
// the bytes n it shares with the body fed so far; open while they are all
// of it (the next piece may share more).
type prefetchWay struct {
	e    *indexMemoEntry
	n    int
	open bool
}

// PrefetchBody returns a prefetch for a request body of size bytes whose
// conversation is its root member named conversation; nil when c keeps no
// index memo, size is below prefetchMinBytes (or unknown: -1), or
// conversation is "".
func (c *ViewCache) PrefetchBody(conversation string, size int) *BodyPrefetch {
	if c == nil || c.bodies == nil || conversation == "" || size < prefetchMinBytes {
		return nil
	}
	return &BodyPrefetch{memo: c.bodies, conversation: conversation}
}

// Feed hands the prefetch the body read so far: body extends the body of
// the previous call, in the same buffer. A body in another buffer (one
// that grew while it was read) ends the prefetch: ParseBody then compares
// it whole.
func (p *BodyPrefetch) Feed(body []byte) {
	if p == nil || p.done {
		return
	}
	if p.registered && (len(body) < len(p.fed) || unsafe.SliceData(body) != unsafe.SliceData(p.fed)) {
		p.Close()
		return
	}
	if !p.registered {
		if len(body) < max(p.keyAt, indexMemoMinBytes) {
			return
		}
		key, n, more := conversationKey(body, p.conversation)
		if n < 2 || !more {
			// The key needs the separator after the second element:
			// until then it could still be a one- or two-element key.
			p.keyAt = 2 * len(body)
			if len(body) > prefetchKeyWithin {
				p.done = true
			}
			return
		}
		p.key = key
		for i := range p.ways {
			if e := p.memo.take(key + uint64(i)); e != nil {
				p.ways[i] = prefetchWay{e: e, open: true}
			}
		}
		p.fed = body[:0]
		p.registered = true
		p.memo.prefetches.add(unsafe.SliceData(body), p)
	}
	p.compare(body)
}

// compare extends each open way's shared bytes over body, which extends
// p.fed.
func (p *BodyPrefetch) compare(body []byte) {
	for i := range p.ways {
		w := &p.ways[i]
		if w.e == nil || !w.open {
			continue
		}
		w.n += CommonPrefix(body[w.n:], w.e.body[w.n:])
		w.open = w.n == len(body) && w.n < len(w.e.body)
	}
	p.fed = body
}

// Close ends the prefetch: the memo's bodies it holds go back, unless
// ParseBody took them. Calling it again does nothing.
func (p *BodyPrefetch) Close() {
	if p == nil || p.done {
		return
	}
	p.done = true
	if p.registered && p.memo.prefetches.remove(unsafe.SliceData(p.fed), p) {
		p.putBack()
	}
}

// putBack returns the ways' entries to the memo.
func (p *BodyPrefetch) putBack() {
	for i := range p.ways {
		if e := p.ways[i].e; e != nil {
			p.ways[i].e = nil
			p.memo.put(e)
		}
	}
}

// prefetched is closest for a body a prefetch compared while it arrived
// (found false: none did, or one of another conversation member).
func (m *indexMemo) prefetched(body []byte, conversation string) (prev *indexMemoEntry, n int, slot uint64, found bool) {
	p := m.prefetches.take(unsafe.SliceData(body))
	if p == nil {
		return nil, 0, 0, false
	}
	if p.conversation != conversation || len(body) < len(p.fed) {
		p.putBack()
		return nil, 0, 0, false
	}
	p.compare(body)
	prev, n, slot = m.pick(p.key, conversation, func(i uint64) (*indexMemoEntry, int) {
		w := &p.ways[i]
		e := w.e
		w.e = nil
		return e, w.n
	})
	p.putBack() // the ways pick did not ask for
	if prev != nil {
		m.prefetchedN.Add(1)
	}
	return prev, n, slot, true
}

// prefetchRegistry holds the prefetches that hold memo entries, by their
// body's first byte. Each is taken out once: by ParseBody of its body
// (take), or by its Close (remove).
type prefetchRegistry struct {
	n  atomic.Int64
	mu sync.Mutex
	m  map[*byte]*BodyPrefetch
}

func (r *prefetchRegistry) add(at *byte, p *BodyPrefetch) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[*byte]*BodyPrefetch{}
	}
	r.m[at] = p
	r.n.Store(int64(len(r.m)))
	r.mu.Unlock()
}

// take removes and returns at's prefetch (nil: none).
func (r *prefetchRegistry) take(at *byte) *BodyPrefetch {
	if r.n.Load() == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.m[at]
	if p != nil {
		delete(r.m, at)
		r.n.Store(int64(len(r.m)))
	}
	return p
}

// remove removes p, registered at at, and reports whether it was there.
func (r *prefetchRegistry) remove(at *byte, p *BodyPrefetch) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[at] != p {
		return false
	}
	delete(r.m, at)
	r.n.Store(int64(len(r.m)))
	return true
}
