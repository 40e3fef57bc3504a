package rewrite

import (
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// The index memo lets ParseRequest validate only what is new in a body.
// Agents resend their whole history with a few KB added at the end of the
// conversation; the memo keeps recent bodies (copies) with their indexes
// (jsonkit.Index), found by a key (memoKey). The key only picks a
// candidate: the two bodies are then compared byte for byte (CommonPrefix)
// and validation resumes after the last shared conversation element
// (jsonkit.ValidIndexedFrom), so a candidate that shares little, or
// nothing, only costs the comparison.
//
// The key is the hash of the conversation's first two elements (the root
// array the codec names: messages, input, contents), found by skipping
// the members before it. They are the bytes of a body that stay put while
// its conversation grows, wherever the conversation lies: Claude Code sends
// its messages first and its system prompt and tools (tens of KB) after
// them, so everything after the new turn moves; other agents send the
// conversation last. The first message tells sessions of one agent kind
// apart (their tasks), the first reply sessions with the same task (its
// ids and text are the model's). A conversation of one or two elements is
// keyed by its first alone, so its key changes once, on its second
// request, and an element's first indexMemoElemKeyBytes only are hashed (a
// cache breakpoint moved off a long first message does not change them).
// Sessions that share both (a task replayed with the same reply) share a
// key: it holds up to indexMemoWays bodies and each request resumes from
// the one it shares most with. A body without such a conversation is keyed
// by two windows of its bytes (memoWindowKey). Bodies below
// indexMemoMinBytes are validated whole (a few microseconds). An entry is
// taken out while a request uses it and put back for the new body, whose
// copy recycles the entry's buffer when it continues that body's
// conversation: only the bytes past the shared prefix are copied. Memory
// is bounded in bytes, least recently used first out.

const (
	indexMemoMinBytes     = 8 << 10
	indexMemoElemKeyBytes = 16 << 10
	indexMemoKeyBytes     = 4 << 10
	indexMemoPrefixBytes  = 32 << 10
	// indexMemoSkipBytes bounds the members skipped to find the
	// conversation: one that starts later is keyed by memoWindowKey.
	indexMemoSkipBytes = 64 << 10
)

type indexMemoEntry struct {
	key uint64
	gen uint64 // names body's bytes (memoGens): a new copy has a new gen
	// prevGen and shared: the entry body was compared with (0: none),
	// and how many leading bytes they share.
	prevGen uint64
	shared  int
	body    []byte
	idx     *jsonkit.Index
	// conv is what ParseMessages read from the body's conversation array,
	// or from an earlier body's that shares conv.valid leading bytes with
	// this one; nil: nothing.
	conv *convMemo
	// derived is what codecs derived from the body's other root members
	// (ReuseMember), for the next body resumed from this one (its
	// conversation's, or another's that shares the bytes: the bytes are
	// compared either way); prevDerived, while the body is parsed, that of
	// the body it was resumed from (read only). Neither is modified once the
	// entry is back in the memo, and neither counts in the memo's size:
	// what ReuseMember keeps must be small (a list of tool names).
	derived, prevDerived []derivedValue
}

// derivedValue is a value ReuseMember computed from root member member.
type derivedValue struct {
	tag    ViewParser
	member int
	val    any
}

// indexMemo is safe for concurrent use; a nil *indexMemo keeps nothing.
type indexMemo struct {
	entries *TakeMemo[uint64, *indexMemoEntry]
	// The bodies validated through the memo (BodyStats): whole, or
	// resumed with the members after the conversation validated or taken
	// from the earlier index.
	whole, resumed, resumedTail atomic.Uint64
	// prefetches are the bodies being compared while they arrive
	// (BodyPrefetch), by their buffer; prefetchedN counts the bodies
	// parsed with the comparison a prefetch made.
	prefetches  prefetchRegistry
	prefetchedN atomic.Uint64
}

func newIndexMemo(budget int64) *indexMemo {
	if budget <= 0 {
		return nil
	}
	return &indexMemo{entries: NewTakeMemo[uint64](budget, func(e *indexMemoEntry) int64 { return int64(cap(e.body)) + e.conv.bytes() })}
}

func (m *indexMemo) take(key uint64) *indexMemoEntry {
	e, _ := m.entries.Take(key)
	return e
}

func (m *indexMemo) put(e *indexMemoEntry) { m.entries.Put(e.key, e) }

// validIndexed is jsonkit.ValidIndexed(body), resumed from the memo's
// body of the same conversation when it has one; conversation names the
// body's conversation member ("": none, or unknown). The entry for body is
// returned, not yet put back (Body.Release puts it), with what the
// conversation of the previous body parsed to that still holds for this
// one (entry.conv, nil when none); entry is nil when the memo keeps
// nothing for body.
func (m *indexMemo) validIndexed(body []byte, conversation string) (idx *jsonkit.Index, ok bool, entry *indexMemoEntry) {
	if m == nil || len(body) < indexMemoMinBytes {
		idx, ok = jsonkit.ValidIndexed(body)
		return idx, ok, nil
	}
	prev, n, slot, found := m.prefetched(body, conversation)
	if !found {
		prev, n, slot = m.closest(memoKey(body, conversation), body, conversation)
	}
	defer func() { m.count(idx) }()
	if prev == nil {
		idx, ok = jsonkit.ValidIndexed(body)
		if ok {
			c := CopyForGrowth(body)
			entry = &indexMemoEntry{key: slot, gen: memoGens.Add(1), body: c, idx: idx.Rebase(c)}
		}
		return idx, ok, entry
	}
	idx, ok = jsonkit.ValidIndexedFrom(body, prev.idx, n)
	if !ok {
		m.put(prev) // still a good reference for the next request
		return idx, ok, nil
	}
	if slot != prev.key {
		// Another conversation's body, which shares only its start with
		// this one: validation resumed from it, and it goes back for its
		// own next request with all it holds (its parsed conversation is
		// its own: not shared), while this body takes a free way.
		c := CopyForGrowth(body)
		m.put(prev)
		return idx, ok, &indexMemoEntry{key: slot, gen: memoGens.Add(1), prevGen: prev.gen, shared: n,
			body: c, idx: idx.Rebase(c), prevDerived: prev.derived}
	}
	c := append(prev.body[:n], body[n:]...) // ours: taken out of the memo
	return idx, ok, &indexMemoEntry{key: slot, gen: memoGens.Add(1), prevGen: prev.gen, shared: n,
		body: c, idx: idx.Rebase(c), conv: prev.conv.sharing(n), prevDerived: prev.derived}
}

// count counts a body the memo validated into idx (nil: invalid, not
// counted).
func (m *indexMemo) count(idx *jsonkit.Index) {
	switch resumed, tail := idx.Resumed(); {
	case idx == nil:
	case tail:
		m.resumedTail.Add(1)
	case resumed:
		m.resumed.Add(1)
	default:
		m.whole.Add(1)
	}
}

// indexMemoWays is how many bodies one memo key holds: conversations whose
// keyed bytes coincide (agents that share a system prompt and differ only
// in their first messages, as a replayed task does) each keep their own
// body instead of taking each other's and validating from their first
// difference on every request.
const indexMemoWays = 4

// closest takes the key's bodies out of the memo and keeps the one that
// shares the longest prefix with body (the others go back), returning it
// with that length, and the way (memo key) the entry for body goes to:
// prev's own when body continues prev's conversation (or no way is free),
// else a free way. It stops looking once a body is continued. prev is nil
// when the key holds nothing; the way is then the key's first free one.
func (m *indexMemo) closest(key uint64, body []byte, conversation string) (prev *indexMemoEntry, n int, way uint64) {
	return m.pick(key, conversation, func(i uint64) (*indexMemoEntry, int) {
		e := m.take(key + i)
		if e == nil {
			return nil, 0
		}
		return e, CommonPrefix(body, e.body)
	})
}

// pick is closest's choice among the key's ways: way(i) hands over the
// entry of way key+i, taken out of the memo (nil: none), with the bytes it
// shares with the body. Ways are asked in order until one continues the
// body's conversation; pick puts back every entry it does not return.
func (m *indexMemo) pick(key uint64, conversation string, way func(i uint64) (*indexMemoEntry, int)) (prev *indexMemoEntry, n int, slot uint64) {
	slot = key
	free := false
	for i := range uint64(indexMemoWays) {
		e, k := way(i)
		if e == nil {
			if !free {
				slot, free = key+i, true
			}
			continue
		}
		if prev != nil && k <= n {
			m.put(e)
			continue
		}
		if prev != nil {
			m.put(prev)
		}
		prev, n = e, k
		if continues(n, conversationEnd(e.idx, conversation)) {
			return prev, n, prev.key
		}
	}
	if prev != nil && !free {
		slot = prev.key
	}
	return prev, n, slot
}

// conversationEnd is where the conversation of the body idx indexes ends:
// the end of its root member named conversation, the body's end when it
// has none.
func conversationEnd(idx *jsonkit.Index, conversation string) int {
	if conversation != "" {
		if end, ok := idx.MemberEnd(conversation); ok {
			return end
		}
	}
	return idx.Bytes()
}

// continues reports whether a body that shares n bytes with an earlier one
// whose conversation ends at byte end (conversationEnd) is
// that one's conversation resent: they differ only near the conversation's
// end (the new turn, a moved cache breakpoint), not from its start on.
// What follows the conversation does not count: Claude Code sends its
// system prompt and tools there, often larger than the conversation.
func continues(n, end int) bool {
	return n >= end-max(4<<10, end/8)
}

// CopyForGrowth copies a conversation's body into a buffer with room for
// its next turns: memos that keep a copy per conversation append the next
// request's new bytes to it in place, where a copy of the exact size would
// be copied whole into a larger buffer on the conversation's second
// request.
func CopyForGrowth(body []byte) []byte {
	return append(make([]byte, 0, len(body)+len(body)/8+4096), body...)
}

// memoGens numbers the bodies the index memo copies (conv.BodyLineage).
var memoGens atomic.Uint64

// Body is a request body validated as JSON with its top level indexed
// (ParseBody), and what the index memo knows of its conversation: the
// views ParseMessages built for the previous body of the same
// conversation, for the elements that lie inside the bytes the two bodies
// share. Release it when parsing is over: the memo keeps the body (and
// what ParseMessages read from it) for the next request only then.
type Body struct {
	Root gjson.Result
	Idx  *jsonkit.Index
	// Lineage relates the body to the one the memo compared it with
	// (zero: the memo keeps nothing for it).
	Lineage conv.BodyLineage

	views *ViewCache
	memo  *indexMemo
	entry *indexMemoEntry // ours until Release puts it in the memo; nil: none
}

// ParseBody validates a request body (an error wrapping ErrMalformed when
// it is not valid JSON or not an object) and indexes its top level, through
// views' index memo: a body that extends one parsed before is validated
// from where the two differ. conversation is the root member that holds the
// conversation (messages, input, contents; "" when there is none), which
// keys the memo. A nil views validates whole and keeps nothing. The caller
// must Release the result.
func ParseBody(views *ViewCache, body []byte, conversation string) (*Body, error) {
	b := &Body{views: views}
	if views != nil {
		b.memo = views.bodies
	}
	idx, ok, entry := b.memo.validIndexed(body, conversation)
	if !ok {
		return nil, fmt.Errorf("%w: body is not valid JSON", ErrMalformed)
	}
	b.Idx, b.entry = idx, entry
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		b.Release()
		return nil, fmt.Errorf("%w: body must be a JSON object", ErrMalformed)
	}
	if err := duplicateKeyError(idx); err != nil {
		b.Release()
		return nil, err
	}
	b.Root = root
	if entry != nil {
		b.Lineage = conv.BodyLineage{Gen: entry.gen, Prev: entry.prevGen, Shared: entry.shared}
	}
	return b, nil
}

// Release hands the body's memo entry back to the memo; b's Root and Idx
// stay valid. Calling it again does nothing.
func (b *Body) Release() {
	if b == nil || b.entry == nil {
		return
	}
	b.entry.prevDerived = nil
	b.memo.put(b.entry)
	b.entry = nil
}

// memoKey is the memo key of body (at least indexMemoMinBytes long): the
// hash of the first two elements of its conversation, the root array
// member named conversation, when it has three or more, else of its first
// (indexMemoElemKeyBytes of each at most); memoWindowKey when it has none,
// or it starts past indexMemoSkipBytes.
func memoKey(body []byte, conversation string) uint64 {
	if conversation != "" {
		if key, n, _ := conversationKey(body, conversation); n > 0 {
			return key
		}
	}
	return memoWindowKey(body)
}

// conversationKey is memoKey's hash of the first elements of body's
// conversation: n is how many it found (0: none, no key), more whether
// another follows. Of a body that is still arriving, the key is the
// whole body's once n is 2 and more is true: the separator after the
// second element has arrived.
func conversationKey(body []byte, conversation string) (key uint64, n int, more bool) {
	var head [2]string
	n, more = jsonkit.LeadingElements(jsonkit.UnsafeString(body), conversation, indexMemoSkipBytes, head[:])
	if n == 0 {
		return 0, 0, false
	}
	key = xxhash.Sum64String(head[0][:min(len(head[0]), indexMemoElemKeyBytes)])
	if n == 2 && more {
		second := xxhash.Sum64String(head[1][:min(len(head[1]), indexMemoElemKeyBytes)])
		key ^= bits.RotateLeft64(second, 29)
	}
	return key, n, more
}

// memoWindowKey is the key of a body without a conversation: the hashes
// of its first memoPrefixLen bytes and of the indexMemoKeyBytes ending at
// memoKeyEnd, combined. It changes when either length crosses a power of
// two.
func memoWindowKey(body []byte) uint64 {
	end := memoKeyEnd(len(body))
	window := xxhash.Sum64(body[end-indexMemoKeyBytes : end])
	return xxhash.Sum64(body[:memoPrefixLen(len(body))]) ^ bits.RotateLeft64(window, 31)
}

// memoPrefixLen is the largest power of two up to n/2, at most
// indexMemoPrefixBytes.
func memoPrefixLen(n int) int {
	k := indexMemoPrefixBytes
	for k > n/2 {
		k >>= 1
	}
	return k
}

// memoKeyEnd is the largest power of two up to three quarters of n.
func memoKeyEnd(n int) int {
	e := 1
	for e*2 <= n*3/4 {
		e *= 2
	}
	return e
}

// ReuseMember returns derive's value for v, a root member of b (a value
// b.Idx.Lookup returned), or the value derive gave for the same member of
// the previous body of b's conversation when the index memo found that
// member's bytes unchanged (jsonkit.Index.Unchanged: in the bytes the two
// bodies share, or after the conversation when all that follows it is the
// same). Claude Code resends its tools, tens of KB, after its messages with
// every request. tag names derive (one per codec and member). The value is
// shared with later requests: it must own its memory (no string or slice
// aliasing the body) and never be modified; derive returns a slice capped
// (slices.Clip), so that an append copies it.
func ReuseMember[T any](b *Body, tag ViewParser, v gjson.Result, derive func() (T, error)) (T, error) {
	e := b.entry
	if e == nil {
		return derive()
	}
	i := b.Idx.MemberAt(v.Index)
	if i < 0 {
		return derive()
	}
	if b.Idx.Unchanged(i) {
		for _, d := range e.prevDerived {
			if d.tag == tag && d.member == i {
				if val, ok := d.val.(T); ok {
					e.derived = append(e.derived, d)
					return val, nil
				}
			}
		}
	}
	val, err := derive()
	if err == nil {
		e.derived = append(e.derived, derivedValue{tag: tag, member: i, val: val})
	}
	return val, err
}

// ReuseToolDefs is ReuseMember for a tools member parsed into tool
// definitions: the list parse returns is handed out capped (slices.Clip),
// as ReuseMember's shared values must be.
func ReuseToolDefs(b *Body, tag ViewParser, tools gjson.Result, parse func() ([]conv.ToolDef, error)) ([]conv.ToolDef, error) {
	return ReuseMember(b, tag, tools, func() ([]conv.ToolDef, error) {
		defs, err := parse()
		return slices.Clip(defs), err
	})
}
