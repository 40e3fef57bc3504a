package rewrite

// Internals the cross-API tests (package rewrite_test, which iterates the
// table rewrite/apis) check.

// AppendUserTextsOneByOne is the reference path AppendUserTexts must agree
// with.
var AppendUserTextsOneByOne = appendUserTextsOneByOne

// UserTextFallbacks is how many user-text batches were applied one by one.
func UserTextFallbacks() int64 { return userTextFallbacks.Load() }

// ArrayOpCopies is how many array values EditMembers copied to run an op
// on them.
func ArrayOpCopies() int64 { return arrayOpCopies.Load() }

// DataEvent is an SSE event with a data field holding data.
func DataEvent(data []byte) Event { return Event{Data: data, hasData: true} }

// The view cache's sizing: shards, bytes counted per entry beyond its
// element, and calls the resolver tracks before switching to a map.
const (
	ViewCacheShards = viewCacheShards
	EntryOverhead   = entryOverhead
	RecentCalls     = recentCalls
)

// SetBudget changes the cache's budget, as the config reload does.
func (c *ViewCache) SetBudget(budget int64) { c.setBudget(budget) }

// Held checks each shard against the limit (ok false when one holds more
// bytes) and returns how many entries the shards hold.
func (c *ViewCache) Held() (held int, ok bool) {
	ok = true
	for i := range c.shards {
		held += len(c.shards[i].cur) + len(c.shards[i].old)
		ok = ok && c.shards[i].curBytes <= c.limit.Load()
	}
	return held, ok
}

// CurEmpty reports whether every shard's current generation is empty.
func (c *ViewCache) CurEmpty() bool {
	for i := range c.shards {
		if len(c.shards[i].cur) != 0 {
			return false
		}
	}
	return true
}
