package rewrite

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// The view cache remembers the view of conversation elements (messages,
// input items, contents) by their exact bytes. Agents resend the whole
// history on every request, so all but the newest element or two of a
// request were parsed before: a hit costs a hash of the element's bytes and
// a map lookup instead of decoding it again, and it brings the message's
// anchor digest (conv.MessageDigest) along.
//
// Entries are context-free. The one part of an element's view that depends
// on the elements before it, the tool name of a tool result whose wire form
// has only the call id, is left empty in the entry and resolved per request
// (ViewResolver). Digests are kept per resolution: an entry's digest is
// reused only when its tool results resolve to the same names again.
//
// A ViewCache is owned by whoever parses requests (the proxy server builds
// one with its configured budget and hands it to the codecs it creates:
// Descriptor.NewCodec) and shared by every route and tenant of that owner:
// its key is the content, so sharing changes nothing but the hit rate. It is
// bounded in bytes (the raw size of the elements, a fair measure of the
// strings their views hold) and evicts by generation: when the current
// generation of a shard is full it becomes the old one and the previous old
// one is dropped; a hit in the old generation moves the entry back.

// viewCacheShards spreads lock contention; a power of two.
const viewCacheShards = 16

// DefaultViewCacheBytes is the view cache's default budget.
const DefaultViewCacheBytes = 64 << 20

// ViewParser tags the element parser an entry came from, so that the same
// bytes parsed by two codecs are two entries. Each parser declares its own
// tag (NewViewParser) next to its code: a pointer, so that keys compare
// and hash as cheaply as a small integer and no list of parsers exists.
type ViewParser *viewParserTag

// viewParserTag names a parser (for debugging; identity is the pointer).
type viewParserTag struct{ name string }

// NewViewParser returns a new parser tag named name (for debugging): each
// API declares one per element parser, once, at package level.
func NewViewParser(name string) ViewParser { return &viewParserTag{name: name} }

type viewKey struct {
	parser ViewParser
	n      int
	h1, h2 uint64
}

// viewEntry is immutable once stored, except for the digest memo.
type viewEntry struct {
	msg  conv.Message // Blocks never modified; tool-result names unresolved
	text string       // for text entries (cachedText)
	size int64
	// digest is the digest for the names its tool results last resolved to.
	digest atomic.Pointer[resolvedDigest]
}

type resolvedDigest struct {
	names  []string // ToolName of each tool-result block, in order
	digest []byte
}

type viewShard struct {
	mu       sync.Mutex
	cur, old map[viewKey]*viewEntry
	curBytes int64
}

// ViewCache is the view cache: safe for concurrent use; a nil *ViewCache
// caches nothing.
type ViewCache struct {
	seeds  [2]maphash.Seed
	limit  atomic.Int64 // bytes per shard generation; 0 disables the cache
	shards [viewCacheShards]viewShard
	hits   atomic.Uint64
	misses atomic.Uint64
	reused atomic.Uint64 // elements taken from the index memo, not looked up
	// bodies is the index memo (index_memo.go), half the budget of its
	// own; nil when the budget is 0.
	bodies *indexMemo
}

// NewViewCache returns a view cache holding up to budget bytes of cached
// elements (two generations of half the budget each); 0 caches nothing.
func NewViewCache(budget int64) *ViewCache {
	c := &ViewCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, bodies: newIndexMemo(budget / 2)}
	c.setBudget(budget)
	return c
}

// Stats reports the cache's hits and misses since it was built (elements
// looked up while parsing requests); zeros for a nil cache.
func (c *ViewCache) Stats() (hits, misses uint64) {
	if c == nil {
		return 0, 0
	}
	return c.hits.Load(), c.misses.Load()
}

// Reused reports how many elements were taken from the previous request's
// views (the index memo: view_reuse.go) since c was built, without a
// lookup (they count as neither hits nor misses); 0 for a nil cache.
func (c *ViewCache) Reused() uint64 {
	if c == nil {
		return 0
	}
	return c.reused.Load()
}

// BodyStats reports how the request bodies of 8 KB or more parsed through
// c's index memo since c was built were validated: whole, resumed from an
// earlier body with what follows the conversation validated, or resumed
// with that taken from the earlier body's index (unchanged bytes); zeros
// for a nil cache or a memo without budget.
func (c *ViewCache) BodyStats() (whole, resumed, resumedTail uint64) {
	if c == nil || c.bodies == nil {
		return 0, 0, 0
	}
	m := c.bodies
	return m.whole.Load(), m.resumed.Load(), m.resumedTail.Load()
}

// Prefetched reports how many request bodies were parsed with the
// comparison a BodyPrefetch made while they arrived (zero for a nil cache
// or a memo without budget).
func (c *ViewCache) Prefetched() uint64 {
	if c == nil || c.bodies == nil {
		return 0
	}
	return c.bodies.prefetchedN.Load()
}

// enabled reports whether c caches anything.
func (c *ViewCache) enabled() bool { return c != nil && c.limit.Load() != 0 }

func (c *ViewCache) setBudget(budget int64) {
	per := max(budget/2/viewCacheShards, 0)
	c.limit.Store(per)
	if per == 0 {
		for i := range c.shards {
			sh := &c.shards[i]
			sh.mu.Lock()
			sh.cur, sh.old, sh.curBytes = nil, nil, 0
			sh.mu.Unlock()
		}
	}
}

func (c *ViewCache) key(p ViewParser, raw string) viewKey {
	return viewKey{parser: p, n: len(raw), h1: maphash.String(c.seeds[0], raw), h2: maphash.String(c.seeds[1], raw)}
}

func (c *ViewCache) get(k viewKey) *viewEntry {
	sh := &c.shards[k.h1%viewCacheShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.cur[k]; e != nil {
		return e
	}
	e := sh.old[k]
	if e != nil {
		delete(sh.old, k)
		sh.insert(k, e, c.limit.Load())
	}
	return e
}

func (c *ViewCache) put(k viewKey, e *viewEntry) {
	limit := c.limit.Load()
	if limit == 0 || e.size > limit {
		return
	}
	sh := &c.shards[k.h1%viewCacheShards]
	sh.mu.Lock()
	sh.insert(k, e, limit)
	sh.mu.Unlock()
}

// insert adds e to the current generation, rotating generations when it
// would overflow. The caller holds sh.mu.
func (sh *viewShard) insert(k viewKey, e *viewEntry, limit int64) {
	if limit == 0 {
		return
	}
	if sh.curBytes+e.size > limit {
		sh.old, sh.cur, sh.curBytes = sh.cur, nil, 0
	}
	if sh.cur == nil {
		sh.cur = make(map[viewKey]*viewEntry)
	}
	sh.cur[k] = e
	sh.curBytes += e.size
}

// ViewResolver parses the elements of one conversation in order through the
// cache, resolving tool-result names against the calls seen so far.
type ViewResolver struct {
	Cache  *ViewCache // nil: no caching
	Parser ViewParser
	Parse  func(gjson.Result, *ToolNames) (conv.Message, error)
	names  ToolNames // the calls seen so far, when the cache is off
	calls  []namedCall
	byID   ToolNames    // the calls seen so far, once there are many
	Arena  []conv.Block // where messages' blocks are copied; nil: allocated 64 at a time
	// prior are views of the elements before the first this resolver
	// parses, whose calls it did not record (reused from the previous
	// request: view_reuse.go); CallName looks there after its own calls.
	prior []conv.Message
}

type namedCall struct{ id, name string }

// recentCalls is how many calls resolve by a backward scan; a conversation
// with more switches to a map (results answer recent calls, and a scan
// must not grow with the conversation).
const recentCalls = 32

func (r *ViewResolver) AddCall(id, name string) {
	if id == "" || name == "" {
		return
	}
	if r.byID != nil {
		r.byID.Add(id, name)
		return
	}
	r.calls = append(r.calls, namedCall{id, name})
	if len(r.calls) > recentCalls {
		for _, c := range r.calls {
			r.byID.Add(c.id, c.name)
		}
	}
}

func (r *ViewResolver) CallName(id string) string {
	if r.byID != nil {
		if name, ok := r.byID[id]; ok {
			return name
		}
		return priorCallName(r.prior, id)
	}
	for i := len(r.calls) - 1; i >= 0; i-- {
		if r.calls[i].id == id {
			return r.calls[i].name
		}
	}
	return priorCallName(r.prior, id)
}

// blocks copies src into the resolver's Arena (one allocation for many
// messages); the copy's capacity is its length, so appending to it (a
// Responses merge) reallocates instead of overwriting its neighbour.
func (r *ViewResolver) blocks(src []conv.Block) []conv.Block {
	if len(src) == 0 {
		return nil
	}
	if len(src) > cap(r.Arena)-len(r.Arena) {
		// The first arena is small (a short request's view, which an open
		// stream keeps for its whole life, stays small); later ones hold
		// 64 blocks or more.
		size := 64
		if r.Arena == nil {
			size = 8
		}
		r.Arena = make([]conv.Block, 0, max(size, 2*len(src)))
	}
	n := len(r.Arena)
	r.Arena = append(r.Arena, src...)
	return r.Arena[n:len(r.Arena):len(r.Arena)]
}

// entryOverhead approximates what an entry costs beyond its element's bytes.
const entryOverhead = 256

// message returns the view of element el. The returned message owns its
// Blocks slice (callers may append to it) and carries its digest.
func (r *ViewResolver) Message(el gjson.Result) (conv.Message, error) {
	views := r.Cache
	if !views.enabled() {
		msg, err := r.Parse(el, &r.names)
		return msg, err
	}
	k := views.key(r.Parser, el.Raw)
	e := views.get(k)
	if e == nil {
		views.misses.Add(1)
		var private ToolNames // the entry must not depend on earlier elements
		msg, err := r.Parse(el, &private)
		if err != nil {
			return conv.Message{}, err
		}
		for i := range msg.Blocks {
			if b := &msg.Blocks[i]; b.Kind == conv.BlockToolResult && b.ToolName != "" && private[b.ToolCallID] == b.ToolName {
				// Named from this element's own calls (or not at all): leave
				// it to the resolution below, like every other result.
				msg.Blocks[i].ToolName = ""
			}
		}
		e = &viewEntry{msg: msg, size: int64(len(el.Raw)) + entryOverhead}
		views.put(k, e)
	} else {
		views.hits.Add(1)
	}
	return r.resolve(e), nil
}

// check reports whether element el parses, as message does, without
// building its view when the cache holds it (an entry is stored only for an
// element that parsed, and parsing does not depend on the elements before
// it). The calls of a checked element are not recorded: check is for the
// elements after the last one whose view is needed.
func (r *ViewResolver) Check(el gjson.Result) error {
	if views := r.Cache; views.enabled() && views.get(views.key(r.Parser, el.Raw)) != nil {
		views.hits.Add(1)
		return nil
	}
	_, err := r.Message(el)
	return err
}

// resolve copies e's view, names its tool results from the calls seen so
// far (then records this element's calls), and attaches the digest for that
// resolution, computing it if the entry has none for these names.
func (r *ViewResolver) resolve(e *viewEntry) conv.Message {
	msg := conv.Message{Role: e.msg.Role, Blocks: r.blocks(e.msg.Blocks)}
	var resolved []string
	for i := range msg.Blocks {
		b := &msg.Blocks[i]
		switch b.Kind {
		case conv.BlockToolCall:
			r.AddCall(b.ToolCallID, b.ToolName)
		case conv.BlockToolResult:
			if b.ToolName == "" {
				b.ToolName = r.CallName(b.ToolCallID)
			}
			resolved = append(resolved, b.ToolName)
		}
	}
	if d := e.digest.Load(); d != nil && slices.Equal(d.names, resolved) {
		msg.Digest = d.digest
		return msg
	}
	d := &resolvedDigest{names: resolved, digest: conv.MessageDigest(&msg)}
	e.digest.Store(d)
	msg.Digest = d.digest
	return msg
}

// CachedText returns what compute returns for the member raw (a system
// prompt: 8 KB of an agent's request, the same on every request), from the
// cache views when these bytes were seen before under tag p. Errors are not
// cached.
func CachedText(views *ViewCache, p ViewParser, raw string, compute func() (string, error)) (string, error) {
	if !views.enabled() || raw == "" {
		return compute()
	}
	k := views.key(p, raw)
	if e := views.get(k); e != nil {
		return e.text, nil
	}
	text, err := compute()
	if err == nil {
		views.put(k, &viewEntry{text: text, size: int64(len(raw)) + entryOverhead})
	}
	return text, err
}
