package jsonkit

import (
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// Names a request repeats on every turn (its tool names, its model) are
// the same strings turn after turn and session after session: copying
// each out of the body was a third of a request's parse allocations
// (pprof, a 50 KB Claude Code request). Name hands out one shared copy.

const (
	// internMaxLen is the longest string Name keeps.
	internMaxLen = 64
	// internMaxEntries bounds the table; a full table starts again empty
	// (names in use are added back on their next request), so names that
	// never come back cannot grow it.
	internMaxEntries = 4096
)

var interned = struct {
	sync.RWMutex
	m map[string]string
}{m: make(map[string]string)}

// Name is OwnedString for a short name: a string that does not alias the
// parsed bytes, shared with every other request that carried the same
// name. Strings longer than internMaxLen, or with escapes, are copied as
// OwnedString copies them. Safe for concurrent use.
func Name(r gjson.Result) string {
	if r.Type != gjson.String || len(r.Str) > internMaxLen || strings.IndexByte(r.Raw, '\\') >= 0 {
		return OwnedString(r)
	}
	interned.RLock()
	s, ok := interned.m[r.Str]
	interned.RUnlock()
	if ok {
		return s
	}
	s = strings.Clone(r.Str)
	interned.Lock()
	if len(interned.m) >= internMaxEntries {
		clear(interned.m)
	}
	interned.m[s] = s
	interned.Unlock()
	return s
}
