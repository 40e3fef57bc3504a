package mock

import (
	"hash/fnv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// This file models the providers' prompt caching (Options.PromptCache), so
// that a test or benchmark can measure what a change to the conversation
// does to cache reads, as the providers would report them.
//
// A request's prompt is read as a sequence of units in the order the
// providers cache them: tools, then the system prompt, then the
// conversation (one unit per content block for Anthropic, per message or
// input item elsewhere). Tokens are estimated as bytes / 4. The cache holds
// hashes of prompt prefixes that end at a unit boundary, per model, each for
// PromptCacheTTL (default five minutes) after it was last written or read.
//
//   - Anthropic (explicit caching): a unit carrying cache_control is a
//     breakpoint. The cache read is the longest prefix, ending at any unit
//     boundary, that an earlier request wrote; the prefix up to the last
//     breakpoint is then written, and what lies between the read and the
//     last breakpoint is reported as cache write. A prefix shorter than
//     1,024 tokens is never cached. Without breakpoints nothing is cached.
//   - OpenAI Chat and Responses, Gemini (automatic caching): every prefix
//     of at least 1,024 tokens ending at a unit boundary is written; the
//     read is the longest one seen, rounded down to a multiple of 128
//     tokens; no cache write is reported.
//
// The rest of the prompt (everything not read or written, the request's
// other members included) is reported as input.

// DefaultPromptCacheTTL is how long a cached prefix lives without use.
const DefaultPromptCacheTTL = 5 * time.Minute

const (
	cacheMinTokens   = 1024 // the smallest cacheable prefix
	cacheAutoStep    = 128  // automatic caching reads in steps of this many tokens
	cacheMaxEntries  = 1 << 18
	bytesPerTokenEst = 4
)

// promptCache is the mock's cache of prompt prefixes.
type promptCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[uint64]time.Time // prefix hash -> expiry
}

func newPromptCache(ttl time.Duration) *promptCache {
	if ttl <= 0 {
		ttl = DefaultPromptCacheTTL
	}
	return &promptCache{ttl: ttl, now: time.Now, entries: map[uint64]time.Time{}}
}

// promptUnit is the end of one unit: its prefix hash and the prompt bytes
// up to it, and whether it is a breakpoint.
type promptUnit struct {
	hash  uint64
	bytes int
	bp    bool
}

// usage fills u's Input, CacheRead and CacheWrite for a request of api with
// body and model, and records what the request writes to the cache.
func (c *promptCache) usage(api apiKind, body []byte, model string, u *Usage) {
	units := promptUnits(api, body, model)
	total := max(1, len(body)/bytesPerTokenEst)
	explicit := api == apiAnthropic
	now := c.now()

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) > cacheMaxEntries {
		c.prune(now)
	}
	readBytes := 0
	for i := len(units) - 1; i >= 0; i-- {
		if exp, ok := c.entries[units[i].hash]; ok && exp.After(now) {
			readBytes = units[i].bytes
			c.entries[units[i].hash] = now.Add(c.ttl)
			break
		}
	}
	read := readBytes / bytesPerTokenEst
	if !explicit {
		read -= read % cacheAutoStep
	}
	write := 0
	for _, un := range units {
		tokens := un.bytes / bytesPerTokenEst
		if tokens < cacheMinTokens || (explicit && !un.bp) {
			continue
		}
		c.entries[un.hash] = now.Add(c.ttl)
		if explicit && tokens > read {
			write = tokens - read
		}
	}
	if read < cacheMinTokens {
		read = 0
		if !explicit {
			write = 0
		}
	}
	u.CacheRead, u.CacheWrite = read, write
	u.Input = max(1, total-read-write)
}

// prune drops expired entries, and everything when that is not enough.
func (c *promptCache) prune(now time.Time) {
	for h, exp := range c.entries {
		if !exp.After(now) {
			delete(c.entries, h)
		}
	}
	if len(c.entries) > cacheMaxEntries {
		clear(c.entries)
	}
}

// promptUnits reads body's prompt as units in caching order, with the hash
// of the prompt (and model) up to the end of each.
func promptUnits(api apiKind, body []byte, model string) []promptUnit {
	h := fnv.New64a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	var units []promptUnit
	n := 0
	add := func(raw string, bp bool) {
		if bp {
			// The marker is not part of the prompt: moving it keeps the
			// prefix (as agents do, turn after turn).
			raw, _ = sjson.Delete(raw, "cache_control")
		}
		h.Write([]byte(raw))
		h.Write([]byte{0})
		n += len(raw)
		units = append(units, promptUnit{hash: h.Sum64(), bytes: n, bp: bp})
	}
	each := func(v gjson.Result, fn func(gjson.Result)) {
		if v.IsArray() {
			v.ForEach(func(_, e gjson.Result) bool { fn(e); return true })
		} else if v.Exists() {
			fn(v)
		}
	}
	cached := func(v gjson.Result) bool { return v.Get("cache_control").Exists() }
	switch api {
	case apiAnthropic:
		each(gjson.GetBytes(body, "tools"), func(t gjson.Result) { add(t.Raw, cached(t)) })
		each(gjson.GetBytes(body, "system"), func(s gjson.Result) { add(s.Raw, cached(s)) })
		gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
			role := m.Get("role").String()
			content := m.Get("content")
			if !content.IsArray() {
				add(role+content.Raw, false)
				return true
			}
			first := true
			content.ForEach(func(_, b gjson.Result) bool {
				raw := b.Raw
				if first {
					raw, first = role+raw, false
				}
				add(raw, cached(b))
				return true
			})
			return true
		})
	case apiChat:
		each(gjson.GetBytes(body, "tools"), func(t gjson.Result) { add(t.Raw, false) })
		each(gjson.GetBytes(body, "messages"), func(m gjson.Result) { add(m.Raw, false) })
	case apiResponses:
		each(gjson.GetBytes(body, "tools"), func(t gjson.Result) { add(t.Raw, false) })
		if in := gjson.GetBytes(body, "instructions"); in.Exists() {
			add(in.Raw, false)
		}
		each(gjson.GetBytes(body, "input"), func(it gjson.Result) { add(it.Raw, false) })
	case apiGemini:
		each(gjson.GetBytes(body, "tools"), func(t gjson.Result) { add(t.Raw, false) })
		if si := gjson.GetBytes(body, "systemInstruction"); si.Exists() {
			add(si.Raw, false)
		}
		each(gjson.GetBytes(body, "contents"), func(c gjson.Result) { add(c.Raw, false) })
	}
	return units
}
