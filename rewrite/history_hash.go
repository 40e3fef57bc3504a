package rewrite

import (
	"bytes"
	"encoding/binary"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// HistoryKeyer is implemented by codecs whose conversation is one
// top-level member of the request body ("messages", "input", "contents"):
// the array whose elements a prompt cache sees as the conversation prefix.
// It is the part of UserTurnLocator that names that member.
type HistoryKeyer interface {
	ConversationKey() string
}

// MaxHistoryElems bounds the elements HashHistory hashes: a longer
// conversation is compared on its first MaxHistoryElems elements only.
const MaxHistoryElems = 4096

// History is the element hashes of one body's conversation array and where
// each element starts, for finding where two requests' conversations
// first differ.
type History struct {
	// Hashes holds, per element (at most MaxHistoryElems), the low 32 bits
	// of the xxhash64 of its bytes, "cache_control" members left out (see
	// HashElement).
	Hashes []uint32
	// Starts holds each hashed element's offset in the body.
	Starts []int
	// End is the offset of the array's closing bracket (where an element
	// the body lacks would have been); -1 when the body has no array.
	End int
}

// HashHistory hashes the elements of body's top-level array member key,
// reusing h's slices. A conversation that is not an array (a Responses
// string input) is hashed as one element; a body without the member, or
// not a JSON object, gives no elements and End -1. body must be valid JSON
// (a request the codec parsed, or a body built from one).
//
// It walks the body once up to the member and once across the
// conversation, hashing each element as it is found (an element holding a
// "cache_control" key, noticed during the walk, is hashed without it).
func HashHistory(h *History, body []byte, key string) {
	h.Hashes, h.Starts, h.End = h.Hashes[:0], h.Starts[:0], -1
	s := jsonkit.UnsafeString(body)
	i := memberValue(s, key)
	if i < 0 {
		return
	}
	if s[i] != '[' {
		end := jsonkit.SkipValue(s, i)
		if end < 0 {
			return
		}
		h.Hashes = append(h.Hashes, uint32(HashElement(s[i:end])))
		h.Starts = append(h.Starts, i)
		h.End = end
		return
	}
	h.walk(s, i+1)
}

// HashHistoryIndexed is HashHistory for a body idx indexes (its root
// arrays' element spans known from validation): the elements are hashed
// where the index says they lie, without walking the conversation, which
// was most of a new long session's cache-integrity check (about 0.9 ms per
// MB of escape-dense JSON, against 0.1 for hashing). Without such an index
// it is HashHistory.
func HashHistoryIndexed(h *History, body []byte, key string, idx *jsonkit.Index) {
	end, es, ok := idx.FirstMemberElems(key)
	if !ok || !idx.Covers(body) {
		HashHistory(h, body, key)
		return
	}
	h.Hashes, h.Starts, h.End = h.Hashes[:0], h.Starts[:0], -1
	s := jsonkit.UnsafeString(body)
	for i := range es.Len() {
		if len(h.Hashes) == MaxHistoryElems {
			return // as walk: past the bound, no end
		}
		a, b := es.At(i)
		h.Hashes = append(h.Hashes, uint32(HashElement(s[a:b])))
		h.Starts = append(h.Starts, a)
	}
	h.End = end - 1
}

// walk hashes the conversation's elements from offset j (an element's
// start, or the space before it) to the array's end.
func (h *History) walk(s string, j int) {
	for {
		if j = jsonkit.SkipSpace(s, j); j >= len(s) {
			return
		}
		if s[j] == ']' {
			h.End = j
			return
		}
		if len(h.Hashes) == MaxHistoryElems {
			return
		}
		end, marked := skipMarked(s, j)
		if end < 0 {
			return
		}
		var sum uint64
		if marked {
			sum = HashElement(s[j:end])
		} else {
			sum = xxhash.Sum64String(s[j:end])
		}
		h.Hashes = append(h.Hashes, uint32(sum))
		h.Starts = append(h.Starts, j)
		if j = jsonkit.SkipSpace(s, end); j < len(s) && s[j] == ',' {
			j++
		}
	}
}

// HashHistoryLike is HashHistory for a body that shares a prefix with
// refBody, whose conversation ref holds: the elements that lie, with the
// separator after them, inside the bytes the two bodies share are taken
// from ref (same offsets, same hashes) and only the rest is walked and
// hashed. The agent's body and the one sent upstream usually differ only
// near their end.
//
// When the bodies differ before the conversation (the body sent upstream
// has the hooks' tools and system text, the agent's has not), the
// conversations are compared from their opening brackets and the shared
// elements are taken from ref at their offsets moved by the difference:
// otherwise a first request of a long session would walk its whole
// conversation twice.
func HashHistoryLike(h *History, body []byte, key string, ref *History, refBody []byte) {
	n := CommonPrefix(body, refBody)
	if hashHistoryMoved(h, body, key, ref, refBody, n) {
		return
	}
	HashHistoryShared(h, body, key, ref, refBody, n)
}

// hashHistoryMoved is HashHistoryLike for bodies whose first n shared
// bytes end before ref's conversation array: h takes ref's elements that
// lie, with the separator after them, inside the bytes the two arrays
// share from their opening brackets, their offsets moved to body's array,
// and walks the rest. It reports false, changing nothing, when it does not
// apply (the shared bytes reach into the array, either conversation is not
// an array, or no element is shared). h must not be ref.
func hashHistoryMoved(h *History, body []byte, key string, ref *History, refBody []byte, n int) bool {
	if h == ref || len(ref.Starts) == 0 || ref.Starts[0] <= n || !ref.ClosedIn(refBody) {
		return false
	}
	s, rs := jsonkit.UnsafeString(body), jsonkit.UnsafeString(refBody)
	ia, ib := memberValue(s, key), memberValue(rs, key)
	if ia < 0 || ib < 0 || s[ia] != '[' || rs[ib] != '[' || ib > ref.Starts[0] {
		return false
	}
	m, next := ref.sharedElems(ib + CommonPrefix(body[ia:], refBody[ib:])) // in refBody's offsets
	if m == 0 {
		return false
	}
	h.takeShared(ref, m, ia-ib)
	h.walk(s, next+ia-ib)
	return true
}

// HashHistoryShared is HashHistoryLike for a caller that compared the two
// bodies already: their first n bytes are equal (n must not exceed the
// length of their longest common prefix). h may be ref: ref's hashes are
// then kept as far as they hold and extended in place (refBody is read
// before h changes).
func HashHistoryShared(h *History, body []byte, key string, ref *History, refBody []byte, n int) {
	if !ref.ClosedIn(refBody) {
		HashHistory(h, body, key) // not an array: one element anyway
		return
	}
	HashHistoryKnown(h, body, key, ref, n)
}

// ClosedIn reports whether body's byte at h.End is the closing bracket of
// the conversation array h hashed (h is body's History).
func (h *History) ClosedIn(body []byte) bool {
	return h.End >= 0 && h.End < len(body) && body[h.End] == ']'
}

// HashHistoryKnown is HashHistoryShared for a caller that checked ref's
// body itself (ref.ClosedIn) and may no longer have it past the n bytes
// it shares with body.
func HashHistoryKnown(h *History, body []byte, key string, ref *History, n int) {
	if ref.End < 0 {
		HashHistory(h, body, key)
		return
	}
	m, next := ref.sharedElems(n)
	if m == 0 {
		HashHistory(h, body, key)
		return
	}
	h.takeShared(ref, m, 0)
	h.walk(jsonkit.UnsafeString(body), next)
}

// sharedElems is how many of h's elements lie, with the one after them,
// inside the first n bytes of h's body (the last of them ends before the
// next one starts; all of them when the closing bracket does too), and
// the offset where the walk goes on after them: the next element, or the
// closing bracket.
func (h *History) sharedElems(n int) (m, next int) {
	m = max(sort.SearchInts(h.Starts, n+1)-1, 0)
	if m == len(h.Starts)-1 && h.End < n {
		m = len(h.Starts) // every element, and the closing bracket, shared
	}
	next = h.End
	if m < len(h.Starts) {
		next = h.Starts[m]
	}
	return m, next
}

// takeShared makes h ref's first m elements, their offsets moved by
// moved, with End unknown until h walks on; h may be ref when moved is 0
// (ref is then cut in place).
func (h *History) takeShared(ref *History, m, moved int) {
	switch {
	case h == ref:
		h.Hashes, h.Starts = h.Hashes[:m], h.Starts[:m]
	case moved == 0:
		h.Hashes = append(h.Hashes[:0], ref.Hashes[:m]...)
		h.Starts = append(h.Starts[:0], ref.Starts[:m]...)
	default:
		h.Hashes = append(h.Hashes[:0], ref.Hashes[:m]...)
		h.Starts = h.Starts[:0]
		for _, st := range ref.Starts[:m] {
			h.Starts = append(h.Starts, st+moved)
		}
	}
	h.End = -1
}

// CommonPrefix is the length of the longest common prefix of a and b:
// compared 4 KB at a time with bytes.Equal (memcmp; in one call when the
// shorter is at most 4 KB and they agree), then, in the block where they
// differ, 64 bytes at a time, then 8 (one word), then byte by byte: a
// difference anywhere costs a few dozen steps past the equal blocks, not
// up to 4 K single-byte ones.
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	if n <= 4096 && bytes.Equal(a[:n], b[:n]) {
		// Short and equal, the usual case of the copy runs' inserted
		// bytes (SharedPrefix): one call instead of a dozen.
		return n
	}
	i := 0
	for _, step := range [...]int{4096, 64} {
		for i+step <= n && bytes.Equal(a[i:i+step], b[i:i+step]) {
			i += step
		}
	}
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// memberValue is the offset of the value of the root object's first member
// named key (compared as written: a key spelt with escapes does not
// match), or -1.
func memberValue(s, key string) int {
	i := jsonkit.SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return -1
	}
	for j := i + 1; ; {
		if j = jsonkit.SkipSpace(s, j); j >= len(s) || s[j] != '"' {
			return -1
		}
		kend := jsonkit.SkipString(s, j)
		if kend < 0 {
			return -1
		}
		name := s[j+1 : kend-1]
		if j = jsonkit.SkipSpace(s, kend); j >= len(s) || s[j] != ':' {
			return -1
		}
		if j = jsonkit.SkipSpace(s, j+1); j >= len(s) {
			return -1
		}
		if name == key {
			return j
		}
		end := jsonkit.SkipValue(s, j)
		if end < 0 {
			return -1
		}
		if j = jsonkit.SkipSpace(s, end); j >= len(s) || s[j] != ',' {
			return -1
		}
		j++
	}
}

// skipMarked is jsonkit.SkipValue that also reports whether the value
// holds the string "cache_control" (as a key or not: HashElement tells).
func skipMarked(s string, i int) (end int, marked bool) {
	if s[i] != '{' && s[i] != '[' {
		return jsonkit.SkipValue(s, i), false
	}
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '"':
			e := jsonkit.SkipString(s, j)
			if e < 0 {
				return -1, false
			}
			if e-j == len(cacheControlKey) && s[j:e] == cacheControlKey {
				marked = true
			}
			j = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return j + 1, marked
			}
		}
	}
	return -1, false
}

// cacheControlKey is the member HashElement leaves out.
const cacheControlKey = `"cache_control"`

// indexCacheControl is strings.Index(s, cacheControlKey), found from its
// underscore: strings.Index starts from the key's first byte, a quote,
// which JSON holds everywhere, and fell back to comparing at every offset
// (pprof: 1.5 s of 1.8 in hashing a new long session's elements). An
// underscore is rare in JSON but for code and names.
func indexCacheControl(s string) int {
	const us = 6 // cacheControlKey[us] == '_'
	for from := us; from < len(s); {
		i := strings.IndexByte(s[from:], '_')
		if i < 0 {
			return -1
		}
		at := from + i - us
		if at+len(cacheControlKey) <= len(s) && s[at:at+len(cacheControlKey)] == cacheControlKey {
			return at
		}
		from += i + 1
	}
	return -1
}

// HashElement is the xxhash64 of one conversation element's bytes with
// every "cache_control" member (Anthropic's cache breakpoints, which agents
// move to the newest message each turn and which do not change the cached
// prefix) left out, together with the comma that separated it. Elements
// without one are hashed as they are, in one pass.
func HashElement(raw string) uint64 {
	i := indexCacheControl(raw)
	if i < 0 {
		return xxhash.Sum64String(raw)
	}
	d := xxhash.New()
	for i >= 0 {
		keyEnd := i + len(cacheControlKey)
		colon := jsonkit.SkipSpace(raw, keyEnd)
		if quoteEscaped(raw, i) || colon >= len(raw) || raw[colon] != ':' {
			// Inside a string, or a string value: not a member.
			_, _ = d.WriteString(raw[:keyEnd])
			raw = raw[keyEnd:]
			i = indexCacheControl(raw)
			continue
		}
		end := jsonkit.SkipValue(raw, jsonkit.SkipSpace(raw, colon+1))
		if end < 0 {
			break // malformed: hash the rest as it is
		}
		before := strings.TrimRight(raw[:i], " \t\r\n")
		after := raw[end:]
		if b, ok := strings.CutSuffix(before, ","); ok {
			before = b
		} else if a := strings.TrimLeft(after, " \t\r\n"); strings.HasPrefix(a, ",") {
			after = a[1:]
		}
		_, _ = d.WriteString(before)
		raw = after
		i = indexCacheControl(raw)
	}
	_, _ = d.WriteString(raw)
	return d.Sum64()
}

// quoteEscaped reports whether the quote at s[i] is escaped (preceded by an
// odd number of backslashes): it is then inside a string.
func quoteEscaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}
